//! Loading an embedded ONNX network into tract and running it on one planar image.

use crate::image::Planar;
use crate::VisionError;
use std::sync::Arc;
use tract_onnx::prelude::*;

/// An optimized, runnable network with a fixed `1 x 3 x size x size` input.
pub(crate) struct Net {
    plan: Arc<TypedRunnableModel>,
}

fn model_err(e: impl std::fmt::Display) -> VisionError {
    VisionError::Model(e.to_string())
}

impl Net {
    pub(crate) fn load(bytes: &[u8], size: usize) -> Result<Net, VisionError> {
        let plan = crate::prelu::onnx()
            .model_for_read(&mut std::io::Cursor::new(bytes))
            .and_then(|m| m.with_input_fact(0, f32::fact([1, 3, size, size]).into()))
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(model_err)?;
        Ok(Net { plan })
    }

    /// Runs the network and returns each output flattened.
    pub(crate) fn run(&self, input: Planar) -> Result<Vec<Vec<f32>>, VisionError> {
        let size = input.size;
        let tensor = Tensor::from_shape(&[1, 3, size, size], &input.data).map_err(model_err)?;
        let outputs = self
            .plan
            .run(tvec!(tensor.into_tvalue()))
            .map_err(model_err)?;
        outputs
            .iter()
            .map(|o| {
                o.to_plain_array_view::<f32>()
                    .map(|v| v.iter().copied().collect::<Vec<f32>>())
                    .map_err(model_err)
            })
            .collect()
    }
}
