//! The Whisper network (encoder and decoder), in candle, with the decoder's self-attention
//! keys and values cached between steps.
//!
//! candle-transformers' Whisper recomputes the whole token sequence through every decoder layer
//! at each step (only the cross-attention is cached): about a hundred tokens per 30 s window
//! cost 50 times the work of one pass. Here each step feeds the new tokens only. The model
//! itself is read-only after loading, so one copy serves every thread; the caches live in a
//! [`DecoderState`] per decoding. The weights are the Hugging Face names of
//! `models/whisper-tiny-en.safetensors` (written by `models/convert_whisper.sh`).

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;
use std::sync::Arc;

/// The network's dimensions, as the converted model's JSON gives them (Hugging Face names).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Config {
    /// Mel bins per frame (80).
    pub num_mel_bins: usize,
    /// Encoder positions: 1500 for 30 s.
    pub max_source_positions: usize,
    /// Width of every layer.
    pub d_model: usize,
    /// Attention heads of the encoder.
    pub encoder_attention_heads: usize,
    /// Encoder layers.
    pub encoder_layers: usize,
    /// Tokens the decoder knows.
    pub vocab_size: usize,
    /// Decoder positions (448).
    pub max_target_positions: usize,
    /// Attention heads of the decoder.
    pub decoder_attention_heads: usize,
    /// Decoder layers.
    pub decoder_layers: usize,
    /// Tokens never sampled (openai-whisper's "non-speech" symbols).
    #[serde(default)]
    pub suppress_tokens: Vec<u32>,
}

/// A weight matrix `[out, in]` in 8 bits (Q8_0: blocks of 32 weights and one scale), multiplied
/// by f32 rows.
///
/// candle multiplies 8-bit weights with AVX-512 VNNI (`vpdpbusd`, 64 byte products an
/// instruction) only when the inner dimension is a multiple of 256 and the outer of 16; otherwise
/// with AVX2 (`vpmaddubsw`). Whisper tiny's width is 384. With `pad`, where the processor has
/// VNNI, the matrix is stored padded with zero columns (and rows) to the shape that path takes,
/// and each input row with zeros to match: the zeros add nothing to any product.
///
/// Only the output projection is padded. That path also quantizes each input row in blocks of
/// 256 values with one scale (Q8_K) instead of 32 (Q8_0); the logits keep their tokens through
/// it (the parity tests), but with every decoder matrix padded the call came back as 35
/// segments, most of them one phrase repeated (BENCHMARKS.md, "AVX-512 kernels and 8-bit
/// products on VNNI").
#[derive(Debug)]
struct Q8 {
    matrix: QMatMul,
    /// Zero columns added to the inner dimension (and to each input row).
    pad_in: usize,
    /// Zero rows added to the matrix (cut from each output row).
    pad_out: usize,
    /// Rows of the unpadded matrix (the output's width).
    out: usize,
}

/// Whether candle's 8-bit products take their AVX-512 VNNI path on this processor (the test
/// candle makes, `quantized::repack_x86::level`).
fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::env::var("ATTUNE_Q8_UNPADDED").as_deref() != Ok("1")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Q8 {
    /// Quantizes `weight` (`[out, in]`, f32), padded to VNNI's shape if `pad` (callers pass
    /// [`vnni()`]; the test pads whatever the processor).
    fn padded(weight: &Tensor, pad: bool) -> Result<Self> {
        let (out, inner) = weight.dims2()?;
        let (pad_in, pad_out) = if pad {
            ((256 - inner % 256) % 256, (16 - out % 16) % 16)
        } else {
            (0, 0)
        };
        let padded = if pad_in + pad_out > 0 {
            weight
                .pad_with_zeros(1, 0, pad_in)?
                .pad_with_zeros(0, 0, pad_out)?
        } else {
            weight.clone()
        };
        Ok(Q8 {
            matrix: QMatMul::from_arc(Arc::new(QTensor::quantize(&padded, GgmlDType::Q8_0)?))?,
            pad_in,
            pad_out,
            out,
        })
    }

    /// `x W^T` for `x` of shape `[.., in]`: `[.., out]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let last = x.rank() - 1;
        let y = if self.pad_in > 0 {
            self.matrix
                .forward(&x.pad_with_zeros(last, 0, self.pad_in)?)?
        } else {
            self.matrix.forward(x)?
        };
        if self.pad_out > 0 {
            y.narrow(last, 0, self.out)
        } else {
            Ok(y)
        }
    }
}

/// Rows up to which a decoder product runs on the 8-bit weights. A step feeds one token (a row);
/// a window's first step feeds its prompt and start tokens at once (up to 227 rows), where
/// candle's 8-bit product costs each row as much as a step's single row, and the f32 product
/// reads the weights once for all of them: a first step of 67 rows took 53 ms instead of 89
/// (BENCHMARKS.md, "AVX-512 kernels and 8-bit products on VNNI").
const Q8_MAX_ROWS: usize = 8;

/// A linear layer in f32, and for the decoder also in 8 bits: a decoder step multiplies one
/// row by each weight matrix, so it reads every weight once per token, and reading a quarter of
/// the bytes is most of a step's cost. Inputs of more than [`Q8_MAX_ROWS`] rows use the f32
/// weights.
#[derive(Debug, Clone)]
struct Proj {
    exact: Linear,
    quantized: Option<(Arc<Q8>, Option<Tensor>)>,
}

impl Proj {
    fn forward(&self, x: &Tensor, exact: bool) -> Result<Tensor> {
        let rows = x.elem_count() / x.dims().last().copied().unwrap_or(1).max(1);
        match (&self.quantized, exact) {
            (Some((q, bias)), false) if rows <= Q8_MAX_ROWS => {
                let y = q.forward(x)?;
                match bias {
                    Some(b) => y.broadcast_add(b),
                    None => Ok(y),
                }
            }
            _ => self.exact.forward(x),
        }
    }
}

fn linear(i: usize, o: usize, bias: bool, vb: VarBuilder<'_>) -> Result<Proj> {
    let w = vb.get((o, i), "weight")?;
    let b = if bias { Some(vb.get(o, "bias")?) } else { None };
    Ok(Proj {
        exact: Linear::new(w, b),
        quantized: None,
    })
}

/// `linear`, with its 8-bit copy.
fn linear_q8(i: usize, o: usize, bias: bool, vb: VarBuilder<'_>) -> Result<Proj> {
    let mut p = linear(i, o, bias, vb)?;
    let q = Q8::padded(p.exact.weight(), false)?;
    p.quantized = Some((Arc::new(q), p.exact.bias().cloned()));
    Ok(p)
}

fn layer_norm(n: usize, vb: VarBuilder<'_>) -> Result<LayerNorm> {
    Ok(LayerNorm::new(
        vb.get(n, "weight")?,
        vb.get(n, "bias")?,
        1e-5,
    ))
}

/// Queries per block of the attention's products (see [`Attention::attend`]).
const ATTENTION_BLOCK: usize = 64;

#[derive(Debug, Clone)]
struct Attention {
    query: Proj,
    key: Proj,
    value: Proj,
    out: Proj,
    heads: usize,
}

impl Attention {
    fn load(n: usize, heads: usize, q8: bool, vb: VarBuilder<'_>) -> Result<Self> {
        let lin = if q8 { linear_q8 } else { linear };
        Ok(Self {
            query: lin(n, n, true, vb.pp("q_proj"))?,
            key: lin(n, n, false, vb.pp("k_proj"))?,
            value: lin(n, n, true, vb.pp("v_proj"))?,
            out: lin(n, n, true, vb.pp("out_proj"))?,
            heads,
        })
    }

    /// `[b, t, n]` to `[b, heads, t, n / heads]`.
    fn split(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, n) = x.dims3()?;
        x.reshape((b, t, self.heads, n / self.heads))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// Keys and values of `x`, split into heads: the keys pre-scaled and transposed
    /// (`[b, heads, n / heads, t]`, contiguous, ready for the product with the queries).
    fn keys_values(&self, x: &Tensor, exact: bool) -> Result<(Tensor, Tensor)> {
        let (_, _, n) = x.dims3()?;
        let scale = ((n / self.heads) as f64).powf(-0.25);
        let k = (self.split(&self.key.forward(x, exact)?)? * scale)?
            .t()?
            .contiguous()?;
        let v = self.split(&self.value.forward(x, exact)?)?;
        Ok((k, v))
    }

    /// Attention of the queries of `x` over transposed keys `kt` and values `v` (as
    /// [`Attention::keys_values`] gives them), with an optional additive mask `[t_q, t_k]`.
    fn attend(
        &self,
        x: &Tensor,
        kt: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        exact: bool,
    ) -> Result<Tensor> {
        let (_, _, n) = x.dims3()?;
        let scale = ((n / self.heads) as f64).powf(-0.25);
        let q = (self.split(&self.query.forward(x, exact)?)? * scale)?;
        let t = q.dim(2)?;
        let wv = if t <= ATTENTION_BLOCK {
            let mut qk = q.matmul(kt)?;
            if let Some(mask) = mask {
                qk = qk.broadcast_add(mask)?;
            }
            super::ops::softmax_last_dim(qk)?.matmul(v)?
        } else {
            // In blocks of queries, so that each block's weights stay in the cache between
            // the two products and the softmax.
            let mut parts = Vec::with_capacity(t.div_ceil(ATTENTION_BLOCK));
            for start in (0..t).step_by(ATTENTION_BLOCK) {
                let len = ATTENTION_BLOCK.min(t - start);
                let mut qk = q.narrow(2, start, len)?.matmul(kt)?;
                if let Some(mask) = mask {
                    qk = qk.broadcast_add(&mask.narrow(0, start, len)?)?;
                }
                parts.push(super::ops::softmax_last_dim(qk)?.matmul(v)?);
            }
            Tensor::cat(&parts, 2)?
        };
        self.out
            .forward(&wv.transpose(1, 2)?.flatten_from(2)?, exact)
    }
}

#[derive(Debug, Clone)]
struct Block {
    attn: Attention,
    attn_ln: LayerNorm,
    cross: Option<(Attention, LayerNorm)>,
    fc1: Proj,
    fc2: Proj,
    mlp_ln: LayerNorm,
}

impl Block {
    /// A block; the decoder's (`cross`) also hold 8-bit copies of their weights.
    fn load(n: usize, heads: usize, cross: bool, vb: VarBuilder<'_>) -> Result<Self> {
        let lin = if cross { linear_q8 } else { linear };
        let cross = if cross {
            Some((
                Attention::load(n, heads, true, vb.pp("encoder_attn"))?,
                layer_norm(n, vb.pp("encoder_attn_layer_norm"))?,
            ))
        } else {
            None
        };
        Ok(Self {
            attn: Attention::load(n, heads, cross.is_some(), vb.pp("self_attn"))?,
            attn_ln: layer_norm(n, vb.pp("self_attn_layer_norm"))?,
            cross,
            fc1: lin(n, 4 * n, true, vb.pp("fc1"))?,
            fc2: lin(4 * n, n, true, vb.pp("fc2"))?,
            mlp_ln: layer_norm(n, vb.pp("final_layer_norm"))?,
        })
    }

    fn mlp(&self, x: &Tensor, exact: bool) -> Result<Tensor> {
        let h = super::ops::gelu(self.fc1.forward(&self.mlp_ln.forward(x)?, exact)?)?;
        x + self.fc2.forward(&h, exact)?
    }
}

/// The layers' cached keys and values of one decoding: the encoder output's (cross
/// attention, computed once per window) and the tokens' so far (self attention).
#[derive(Debug, Clone)]
pub struct DecoderState {
    cross: Vec<(Tensor, Tensor)>,
    past: Vec<Option<(Tensor, Tensor)>>,
    /// Tokens fed so far (the next position).
    pub position: usize,
}

/// Whisper: the audio encoder and the text decoder, read-only after loading.
#[derive(Debug, Clone)]
pub struct WhisperNet {
    conv1: Conv1d,
    conv2: Conv1d,
    positions_audio: Tensor,
    encoder: Vec<Block>,
    encoder_ln: LayerNorm,
    embed: Tensor,
    /// The output projection (the token embedding, tied), quantized to 8 bits: each step
    /// reads all of it, and at 4 bytes a weight that read is most of a step's cost.
    logits: Arc<Q8>,
    positions_text: Tensor,
    decoder: Vec<Block>,
    decoder_ln: LayerNorm,
    /// The configuration the network was built from.
    pub config: Config,
}

/// The encoder's fixed sinusoidal positions, as openai-whisper's `sinusoids`.
fn sinusoids(length: usize, channels: usize, device: &Device) -> Result<Tensor> {
    let increment = (10_000f64).ln() / (channels / 2 - 1) as f64;
    let mut data = vec![0f32; length * channels];
    for t in 0..length {
        for i in 0..channels / 2 {
            let x = t as f64 * (-(increment * i as f64)).exp();
            data[t * channels + i] = x.sin() as f32;
            data[t * channels + channels / 2 + i] = x.cos() as f32;
        }
    }
    Tensor::from_vec(data, (length, channels), device)
}

impl WhisperNet {
    /// Builds the network from its weights (any float type; computed in f32).
    pub fn load(vb: VarBuilder<'_>, config: Config) -> Result<Self> {
        let n = config.d_model;
        let enc = vb.pp("model.encoder");
        let dec = vb.pp("model.decoder");
        let conv = |i, o, stride, vb: VarBuilder<'_>| -> Result<Conv1d> {
            let cfg = Conv1dConfig {
                padding: 1,
                stride,
                ..Default::default()
            };
            Ok(Conv1d::new(
                vb.get((o, i, 3), "weight")?,
                Some(vb.get(o, "bias")?),
                cfg,
            ))
        };
        let embed = dec.get((config.vocab_size, n), "embed_tokens.weight")?;
        let logits = Q8::padded(&embed, vnni())?;
        Ok(Self {
            conv1: conv(config.num_mel_bins, n, 1, enc.pp("conv1"))?,
            conv2: conv(n, n, 2, enc.pp("conv2"))?,
            positions_audio: sinusoids(config.max_source_positions, n, vb.device())?,
            encoder: (0..config.encoder_layers)
                .map(|i| {
                    Block::load(
                        n,
                        config.encoder_attention_heads,
                        false,
                        enc.pp(format!("layers.{i}")),
                    )
                })
                .collect::<Result<_>>()?,
            encoder_ln: layer_norm(n, enc.pp("layer_norm"))?,
            embed,
            logits: Arc::new(logits),
            positions_text: dec.get((config.max_target_positions, n), "embed_positions.weight")?,
            decoder: (0..config.decoder_layers)
                .map(|i| {
                    Block::load(
                        n,
                        config.decoder_attention_heads,
                        true,
                        dec.pp(format!("layers.{i}")),
                    )
                })
                .collect::<Result<_>>()?,
            decoder_ln: layer_norm(n, dec.pp("layer_norm"))?,
            config,
        })
    }

    /// The encoder's output `[1, frames / 2, d_model]` for a log-mel `[1, bins, frames]`.
    pub fn encode(&self, mel: &Tensor) -> Result<Tensor> {
        let x = super::ops::gelu(self.conv1.forward(mel)?)?;
        let x = super::ops::gelu(self.conv2.forward(&x)?)?;
        let x = x.transpose(1, 2)?;
        let t = x.dim(1)?;
        let mut x = x.broadcast_add(&self.positions_audio.narrow(0, 0, t)?)?;
        for block in &self.encoder {
            let h = block.attn_ln.forward(&x)?;
            let (k, v) = block.attn.keys_values(&h, true)?;
            x = (&x + block.attn.attend(&h, &k, &v, None, true)?)?;
            x = block.mlp(&x, true)?;
        }
        self.encoder_ln.forward(&x)
    }

    /// A fresh decoding over one window's encoder output.
    pub fn start(&self, audio: &Tensor) -> Result<DecoderState> {
        let cross = self
            .decoder
            .iter()
            .map(|b| match &b.cross {
                Some((attn, _)) => attn.keys_values(audio, true),
                None => unreachable!("decoder blocks attend to the audio"),
            })
            .collect::<Result<_>>()?;
        Ok(DecoderState {
            cross,
            past: vec![None; self.decoder.len()],
            position: 0,
        })
    }

    /// Feeds `tokens` after those already fed and gives the logits `[tokens.len(), vocab]`
    /// of the last `keep` of them.
    pub fn step(&self, state: &mut DecoderState, tokens: &[u32], keep: usize) -> Result<Tensor> {
        self.step_with(state, tokens, keep, false)
    }

    /// As [`WhisperNet::step`]; with `exact`, the output projection runs in f32 from the
    /// unquantized embedding (for comparing the quantized one with the reference).
    pub fn step_with(
        &self,
        state: &mut DecoderState,
        tokens: &[u32],
        keep: usize,
        exact: bool,
    ) -> Result<Tensor> {
        let device = self.embed.device();
        let t = tokens.len();
        let ids = Tensor::new(tokens, device)?;
        let x = self.embed.index_select(&ids, 0)?;
        let x = (x + self.positions_text.narrow(0, state.position, t)?)?;
        let mut x = x.unsqueeze(0)?;
        let total = state.position + t;
        // Causal mask over all positions so far, for the new queries only.
        let past = state.position;
        let mask = if t > 1 {
            let data: Vec<f32> = (0..t)
                .flat_map(|i| {
                    (0..total).map(move |j| if j > past + i { f32::NEG_INFINITY } else { 0.0 })
                })
                .collect();
            Some(Tensor::from_vec(data, (t, total), device)?)
        } else {
            None
        };
        for (i, block) in self.decoder.iter().enumerate() {
            let h = block.attn_ln.forward(&x)?;
            let (k, v) = block.attn.keys_values(&h, exact)?;
            let (k, v) = match &state.past[i] {
                Some((pk, pv)) => (Tensor::cat(&[pk, &k], 3)?, Tensor::cat(&[pv, &v], 2)?),
                None => (k, v),
            };
            x = (&x + block.attn.attend(&h, &k, &v, mask.as_ref(), exact)?)?;
            state.past[i] = Some((k, v));
            if let Some((cross, ln)) = &block.cross {
                let (ck, cv) = &state.cross[i];
                x = (&x + cross.attend(&ln.forward(&x)?, ck, cv, None, exact)?)?;
            }
            x = block.mlp(&x, exact)?;
        }
        state.position = total;
        let x = self.decoder_ln.forward(&x)?;
        let keep = keep.min(t);
        let x = x.narrow(1, t - keep, keep)?.squeeze(0)?.contiguous()?;
        if exact {
            x.matmul(&self.embed.t()?)
        } else {
            self.logits.forward(&x)?.to_dtype(DType::F32)
        }
    }

    /// The last dimension of the logits.
    pub fn vocab(&self) -> usize {
        self.config.vocab_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic matrix of values in -1..1.
    fn values(rows: usize, cols: usize, seed: u32) -> Tensor {
        let mut x = seed;
        let data: Vec<f32> = (0..rows * cols)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            })
            .collect();
        Tensor::from_vec(data, (rows, cols), &Device::Cpu).unwrap()
    }

    #[test]
    fn a_padded_eight_bit_matrix_gives_the_products_of_the_unpadded_one() {
        // Whisper tiny's output projection has this inner width, and a row count that is not a
        // multiple of 16; a smaller vocabulary keeps the test quick.
        let w = values(1000 + 5, 384, 1);
        let x = values(3, 384, 2);
        let exact: Vec<Vec<f32>> = x.matmul(&w.t().unwrap()).unwrap().to_vec2().unwrap();
        for pad in [false, true] {
            let q = Q8::padded(&w, pad).unwrap();
            assert_eq!((q.pad_in, q.pad_out), if pad { (128, 3) } else { (0, 0) });
            let got: Vec<Vec<f32>> = q.forward(&x).unwrap().to_vec2().unwrap();
            assert_eq!(got.len(), 3);
            for (g, e) in got.iter().zip(&exact) {
                assert_eq!(g.len(), 1005, "the padding is cut from the output");
                // Products of 384 terms of about 0.33 each: 8-bit rounding of weights and
                // inputs leaves errors around 0.05; a lost or misplaced column would be ~5.
                let worst = g
                    .iter()
                    .zip(e)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                assert!(worst < 0.3, "pad {pad}: differs by up to {worst}");
            }
        }
    }
}
