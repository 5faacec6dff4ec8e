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
    /// Loads `bytes` (ONNX) with a fixed input of `size` x `size` and optimizes it.
    pub(crate) fn load(bytes: &[u8], size: usize) -> Result<Net, VisionError> {
        Self::load_with(crate::prelu::onnx(), bytes, size)
    }

    /// [`Net::load`] through a given ONNX front end (the test compares ours with tract's).
    fn load_with(onnx: tract_onnx::Onnx, bytes: &[u8], size: usize) -> Result<Net, VisionError> {
        let plan = onnx
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{INPUT, MODEL};

    #[test]
    fn the_face_mesh_gives_the_same_bits_with_tracts_prelu_and_ours() {
        let theirs = Net::load_with(tract_onnx::onnx(), MODEL, INPUT).unwrap();
        let ours = Net::load(MODEL, INPUT).unwrap();
        // A picture with structure at every scale, values in the mesh's 0..1.
        let data: Vec<f32> = (0..3 * INPUT * INPUT)
            .map(|i| {
                let (c, y, x) = (i / (INPUT * INPUT), (i / INPUT) % INPUT, i % INPUT);
                (0.5 + 0.3 * ((x as f32 * 0.11 + c as f32).sin() * (y as f32 * 0.07).cos())
                    + 0.2 * (((x * 7 + y * 13 + c * 5) % 17) as f32 / 17.0 - 0.5))
                    .clamp(0.0, 1.0)
            })
            .collect();
        let bits = |net: &Net| -> Vec<Vec<u32>> {
            let input = Planar {
                size: INPUT,
                data: data.clone(),
            };
            net.run(input)
                .unwrap()
                .iter()
                .map(|o| o.iter().map(|v| v.to_bits()).collect())
                .collect()
        };
        let (want, got) = (bits(&theirs), bits(&ours));
        assert_eq!(want.len(), 2, "landmarks and presence");
        assert_eq!(got, want);
    }
}
