//! Word error rate, for measuring transcripts against human references.
//!
//! [`normalize_english`] is the part of openai-whisper's `EnglishTextNormalizer` that matters
//! for conversational English, so that WER counts words rather than spelling: lower case;
//! anything in brackets or parentheses dropped; hesitations (`uh`, `um`, `hmm`, `mm`, `mhm`,
//! `ah`, `er`, ...) dropped; contractions expanded (`n't` -> ` not`, `'m` -> ` am`, `'re` ->
//! ` are`, `'ll` -> ` will`, `'ve` -> ` have`, `'d` -> ` would`; `won't` -> `will not`,
//! `can't` -> `can not`); punctuation removed; a lone `oh` is the digit `0`, as Whisper's number
//! normalizer reads it. Not reproduced: number words to digits beyond that, British to
//! American spelling. The parity test checks it against Whisper's own on the reference texts.

/// Hesitations Whisper's normalizer removes.
const FILLERS: &[&str] = &[
    "hmm", "mm", "mhm", "mmm", "uh", "um", "ah", "er", "eh", "hm", "umm", "uhm",
];

/// Words of `text`, normalized for scoring.
pub fn normalize_english(text: &str) -> Vec<String> {
    let mut s = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            '\u{2019}' | '\u{2018}' => s.push('\''),
            _ => s.extend(c.to_lowercase()),
        }
    }
    let mut words = Vec::new();
    for raw in s.split_whitespace() {
        let w: String = raw
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '\'')
            .collect();
        let w = w.trim_matches('\'');
        if w.is_empty() {
            continue;
        }
        let expanded: Vec<String> = match w {
            "won't" => vec!["will".into(), "not".into()],
            "can't" => vec!["can".into(), "not".into()],
            _ => {
                let mut out = None;
                for (suffix, word) in [
                    ("n't", "not"),
                    ("'m", "am"),
                    ("'re", "are"),
                    ("'ll", "will"),
                    ("'ve", "have"),
                    ("'d", "would"),
                ] {
                    if let Some(stem) = w.strip_suffix(suffix) {
                        if !stem.is_empty() {
                            out = Some(vec![stem.to_string(), word.to_string()]);
                            break;
                        }
                    }
                }
                out.unwrap_or_else(|| vec![w.to_string()])
            }
        };
        for e in expanded {
            if FILLERS.contains(&e.as_str()) {
                continue;
            }
            words.push(if e == "oh" { "0".to_string() } else { e });
        }
    }
    words
}

/// Substitutions, deletions and insertions turning `reference` into `hypothesis` (a
/// minimum-edit alignment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WordErrors {
    /// Reference words replaced.
    pub substitutions: usize,
    /// Reference words missing.
    pub deletions: usize,
    /// Words the hypothesis added.
    pub insertions: usize,
    /// Words in the reference.
    pub reference_words: usize,
}

impl WordErrors {
    /// All errors over the reference's words.
    pub fn rate(&self) -> f64 {
        (self.substitutions + self.deletions + self.insertions) as f64
            / self.reference_words.max(1) as f64
    }
}

/// The words of a transcript in NIST's STM format (one segment a line: file, channel, speaker,
/// start, end, then the words; `;;` comment lines and lines without words skipped), in the
/// order of the lines, joined by single spaces.
pub fn stm_text(stm: &str) -> String {
    let mut out = String::new();
    for line in stm.lines().filter(|l| !l.trim_start().starts_with(";;")) {
        for word in line.split_whitespace().skip(5) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

/// Aligns two word sequences (Levenshtein over words).
pub fn word_errors(reference: &[String], hypothesis: &[String]) -> WordErrors {
    let (n, m) = (reference.len(), hypothesis.len());
    // cost, substitutions, deletions, insertions
    let mut prev: Vec<(usize, usize, usize, usize)> = (0..=m).map(|j| (j, 0, 0, j)).collect();
    for i in 1..=n {
        let mut cur = vec![(i, 0, i, 0); m + 1];
        for j in 1..=m {
            let same = reference[i - 1] == hypothesis[j - 1];
            let diag = prev[j - 1];
            let sub = (
                diag.0 + usize::from(!same),
                diag.1 + usize::from(!same),
                diag.2,
                diag.3,
            );
            let del = (prev[j].0 + 1, prev[j].1, prev[j].2 + 1, prev[j].3);
            let ins = (
                cur[j - 1].0 + 1,
                cur[j - 1].1,
                cur[j - 1].2,
                cur[j - 1].3 + 1,
            );
            cur[j] = [sub, del, ins]
                .into_iter()
                .min_by_key(|c| c.0)
                .expect("three candidates");
        }
        prev = cur;
    }
    let (_, s, d, i) = prev[m];
    WordErrors {
        substitutions: s,
        deletions: d,
        insertions: i,
        reference_words: n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn an_stm_transcript_gives_its_words_in_order_without_the_fields_or_comments() {
        let stm = ";; CATEGORY \"0\" \"\" \"\"\n\
                   call 1 Diane 6.68 7.16 Hello?\n\
                   call 1 Sheila 7.634 8.155  Oh,   hello.\n\
                   call 1 Diane 9.0 9.5\n";
        assert_eq!(stm_text(stm), "Hello? Oh, hello.");
    }

    #[test]
    fn normalizes_like_whispers_english_normalizer() {
        assert_eq!(
            normalize_english("Oh, I don't [laughs] think so, um, you're right."),
            words("0 i do not think so you are right")
        );
        assert_eq!(
            normalize_english("Won't it? Can't!"),
            words("will not it can not")
        );
    }

    #[test]
    fn counts_each_kind_of_error() {
        let e = word_errors(&words("a b c d"), &words("a x c d e"));
        assert_eq!((e.substitutions, e.deletions, e.insertions), (1, 0, 1));
        let e = word_errors(&words("a b c d"), &words("a d"));
        assert_eq!((e.substitutions, e.deletions, e.insertions), (0, 2, 0));
        assert!((e.rate() - 0.5).abs() < 1e-12);
        assert_eq!(word_errors(&words("a b"), &words("a b")).rate(), 0.0);
    }
}
