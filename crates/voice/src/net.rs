//! Loading an embedded ONNX network into tract, once per process, and running it.

use crate::VoiceError;
use std::sync::Arc;
use tract_onnx::prelude::*;

pub(crate) fn model_err(e: impl std::fmt::Display) -> VoiceError {
    VoiceError::Model(e.to_string())
}

/// Parses an embedded ONNX file (shape inference still open).
pub(crate) fn parse(bytes: &[u8]) -> Result<InferenceModel, VoiceError> {
    tract_onnx::onnx()
        .model_for_read(&mut std::io::Cursor::new(bytes))
        .map_err(model_err)
}

/// An optimized plan of `model` with every input's shape fixed (outputs left to inference).
pub(crate) fn plan(
    model: InferenceModel,
    inputs: &[&[usize]],
) -> Result<Arc<TypedRunnableModel>, VoiceError> {
    let mut model = model;
    for (i, shape) in inputs.iter().enumerate() {
        model = model
            .with_input_fact(i, f32::fact(*shape).into())
            .map_err(model_err)?;
    }
    let outputs = model.output_outlets().map_err(model_err)?.len();
    for o in 0..outputs {
        model = model
            .with_output_fact(o, InferenceFact::default())
            .map_err(model_err)?;
    }
    model
        .into_optimized()
        .and_then(|m| m.into_runnable())
        .map_err(model_err)
}

/// Runs `plan` on `inputs` (flat data with their shapes) and returns each output flattened.
pub(crate) fn run(
    plan: &Arc<TypedRunnableModel>,
    inputs: Vec<(&[usize], &[f32])>,
) -> Result<Vec<Vec<f32>>, VoiceError> {
    let tensors = inputs
        .into_iter()
        .map(|(shape, data)| {
            Tensor::from_shape(shape, data)
                .map(|t| t.into_tvalue())
                .map_err(model_err)
        })
        .collect::<Result<TVec<_>, _>>()?;
    let outputs = plan.run(tensors).map_err(model_err)?;
    outputs
        .iter()
        .map(|o| {
            o.to_plain_array_view::<f32>()
                .map(|v| v.iter().copied().collect::<Vec<f32>>())
                .map_err(model_err)
        })
        .collect()
}
