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
    /// Loads `bytes` (ONNX) with a fixed input of `size` x `size` and optimizes it, with our
    /// `PRelu` and our loops for the operations tract runs slowly (`kernels.rs`).
    pub(crate) fn load(bytes: &[u8], size: usize) -> Result<Net, VisionError> {
        Self::load_with(crate::prelu::onnx(), bytes, size, true)
    }

    /// [`Net::load`] through a given ONNX front end, with or without our loops (the tests
    /// compare ours with tract's).
    fn load_with(
        onnx: tract_onnx::Onnx,
        bytes: &[u8],
        size: usize,
        our_kernels: bool,
    ) -> Result<Net, VisionError> {
        let mut model = onnx
            .model_for_read(&mut std::io::Cursor::new(bytes))
            .and_then(|m| m.with_input_fact(0, f32::fact([1, 3, size, size]).into()))
            .and_then(|m| m.into_typed())
            .map_err(model_err)?;
        // What `into_optimized` does, with our operations swapped in between tract's two
        // stages: after decluttering (the graph's final shape) and before the lowering to
        // tract's kernels, which leaves our operations as they are.
        model.declutter().map_err(model_err)?;
        if our_kernels {
            crate::kernels::substitute(&mut model).map_err(model_err)?;
        }
        model.optimize().map_err(model_err)?;
        if our_kernels {
            // The lowering splits some paddings off convolutions as tract's `Pad`: ours too.
            crate::kernels::substitute(&mut model).map_err(model_err)?;
        }
        let plan = model.into_runnable().map_err(model_err)?;
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

    /// Both networks, loaded by tract's own ONNX front end and operations, and as we load them
    /// (our `PRelu`, our loops in `kernels.rs`): the same bits out for the same pictures.
    #[test]
    fn the_face_networks_give_the_same_bits_with_tracts_operations_and_ours() {
        let networks = [
            ("mesh", crate::mesh::MODEL, crate::mesh::INPUT, 0.0f32),
            ("detector", crate::detect::MODEL, crate::detect::INPUT, -1.0),
        ];
        for (name, model, size, low) in networks {
            let theirs = Net::load_with(tract_onnx::onnx(), model, size, false).unwrap();
            let ours = Net::load(model, size).unwrap();
            // A picture with structure at every scale, values in the network's range (0..1 for
            // the mesh, -1..1 for the detector); and a black one, whose zeros make the products
            // of negative weights -0.
            let pattern: Vec<f32> = (0..3 * size * size)
                .map(|i| {
                    let (c, y, x) = (i / (size * size), (i / size) % size, i % size);
                    let v = (0.5
                        + 0.3 * ((x as f32 * 0.11 + c as f32).sin() * (y as f32 * 0.07).cos())
                        + 0.2 * (((x * 7 + y * 13 + c * 5) % 17) as f32 / 17.0 - 0.5))
                        .clamp(0.0, 1.0);
                    low + v * (1.0 - low)
                })
                .collect();
            let black = vec![low; 3 * size * size];
            for data in [pattern, black] {
                let bits = |net: &Net| -> Vec<Vec<u32>> {
                    let input = Planar {
                        size,
                        data: data.clone(),
                    };
                    net.run(input)
                        .unwrap()
                        .iter()
                        .map(|o| o.iter().map(|v| v.to_bits()).collect())
                        .collect()
                };
                let (want, got) = (bits(&theirs), bits(&ours));
                assert_eq!(want.len(), 2, "{name}: two outputs");
                assert_eq!(got, want, "{name}");
            }
        }
    }

    /// The loops of `kernels.rs` do run in both networks (a shape they do not match would
    /// silently leave tract's operation, and the bit test above would pass without them).
    #[test]
    fn both_face_networks_run_our_loops() {
        for (name, model, size) in [
            ("mesh", crate::mesh::MODEL, crate::mesh::INPUT),
            ("detector", crate::detect::MODEL, crate::detect::INPUT),
        ] {
            let net = Net::load(model, size).unwrap();
            let ops: Vec<String> = net
                .plan
                .model()
                .nodes
                .iter()
                .map(|n| n.op.name().to_string())
                .collect();
            let count = |op: &str| ops.iter().filter(|o| *o == op).count();
            let (conv, pool, pad) = (
                count("AttuneDepthwise3x3s2"),
                count("AttuneMaxPool2x2"),
                count("AttunePadConstant"),
            );
            eprintln!("{name}: {conv} depthwise, {pool} max pools, {pad} paddings of ours");
            assert!(conv > 0 && pool > 0 && pad > 0, "{name}: {ops:?}");
        }
    }
}
