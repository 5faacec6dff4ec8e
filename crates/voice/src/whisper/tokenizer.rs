//! Whisper's tokens back to text. Decoding needs no BPE merges: every token is a string of
//! GPT-2 "byte-level" characters (each byte mapped to a printable character), so the text is
//! the concatenation mapped back to bytes. Special tokens are found by name in the
//! Hugging Face `tokenizer.json` the model ships with.

use serde::Deserialize;
use std::collections::HashMap;

/// The ids Whisper's decoding rules need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Specials {
    /// `<|endoftext|>`: the end of a window's text, and the first non-text id.
    pub eot: u32,
    /// `<|startoftranscript|>`.
    pub sot: u32,
    /// `<|startofprev|>`: introduces the previous window's text as a prompt.
    pub sot_prev: u32,
    /// `<|startoflm|>`.
    pub sot_lm: u32,
    /// `<|translate|>`.
    pub translate: u32,
    /// `<|transcribe|>`.
    pub transcribe: u32,
    /// `<|nocaptions|>` or `<|nospeech|>`: its probability after the start says "no speech".
    pub no_speech: u32,
    /// `<|notimestamps|>`.
    pub no_timestamps: u32,
    /// `<|0.00|>`: the first of the timestamp tokens, one per 20 ms.
    pub timestamp_begin: u32,
    /// The id of `" "` (suppressed as a window's first token).
    pub space: u32,
}

/// Token ids to text.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// Each id's bytes (empty for ids the vocabulary does not name).
    bytes: Vec<Vec<u8>>,
    /// The special ids.
    pub specials: Specials,
}

#[derive(Deserialize)]
struct Json {
    model: Model,
    #[serde(default)]
    added_tokens: Vec<Added>,
}

#[derive(Deserialize)]
struct Model {
    vocab: HashMap<String, u32>,
}

#[derive(Deserialize)]
struct Added {
    id: u32,
    content: String,
}

/// GPT-2's map from bytes to printable characters, inverted.
fn unicode_to_byte() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut map = HashMap::new();
    let mut extra = 0u32;
    for b in 0u32..256 {
        let c = if printable.contains(&b) {
            b
        } else {
            extra += 1;
            255 + extra
        };
        map.insert(char::from_u32(c).expect("a valid scalar"), b as u8);
    }
    map
}

impl Tokenizer {
    /// Reads a Hugging Face `tokenizer.json`.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let json: Json = serde_json::from_str(text).map_err(|e| format!("tokenizer: {e}"))?;
        let table = unicode_to_byte();
        let mut names: HashMap<String, u32> = HashMap::new();
        let mut size = 0usize;
        let mut entries: Vec<(u32, Vec<u8>)> = Vec::new();
        for (token, id) in &json.model.vocab {
            let bytes: Option<Vec<u8>> = token.chars().map(|c| table.get(&c).copied()).collect();
            if let Some(bytes) = bytes {
                entries.push((*id, bytes));
            }
            size = size.max(*id as usize + 1);
        }
        for a in &json.added_tokens {
            names.insert(a.content.clone(), a.id);
            size = size.max(a.id as usize + 1);
        }
        let added: std::collections::HashSet<u32> = names.values().copied().collect();
        let mut bytes = vec![Vec::new(); size];
        for (id, b) in entries {
            if !added.contains(&id) {
                bytes[id as usize] = b;
            }
        }
        let find = |name: &str| -> Result<u32, String> {
            names
                .get(name)
                .or_else(|| json.model.vocab.get(name))
                .copied()
                .ok_or_else(|| format!("tokenizer: no {name}"))
        };
        let no_speech = find("<|nospeech|>").or_else(|_| find("<|nocaptions|>"))?;
        let specials = Specials {
            eot: find("<|endoftext|>")?,
            sot: find("<|startoftranscript|>")?,
            sot_prev: find("<|startofprev|>")?,
            sot_lm: find("<|startoflm|>")?,
            translate: find("<|translate|>")?,
            transcribe: find("<|transcribe|>")?,
            no_speech,
            no_timestamps: find("<|notimestamps|>")?,
            // Hugging Face's file may not list the timestamp tokens: they follow
            // `<|notimestamps|>`, one per 20 ms.
            timestamp_begin: find("<|0.00|>")
                .or_else(|_| find("<|notimestamps|>").map(|t| t + 1))?,
            space: *json
                .model
                .vocab
                .get("Ġ")
                .ok_or("tokenizer: no space token")?,
        };
        Ok(Self { bytes, specials })
    }

    /// The text of `tokens`, skipping special and timestamp tokens (invalid UTF-8, as a
    /// multi-byte character cut between windows, becomes U+FFFD).
    pub fn decode(&self, tokens: &[u32]) -> String {
        let mut out = Vec::new();
        for &t in tokens {
            if t < self.specials.eot {
                if let Some(b) = self.bytes.get(t as usize) {
                    out.extend_from_slice(b);
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The bytes of one token (empty for special tokens).
    pub fn token_bytes(&self, token: u32) -> &[u8] {
        if token < self.specials.eot {
            self.bytes.get(token as usize).map_or(&[], |b| b.as_slice())
        } else {
            &[]
        }
    }
}
