use tract_core::internal::*;
use tract_linalg::mmm::{AsInputValue, FusedSpec, MatMatMul};
use tract_linalg::x86_64::mmm::*;
use std::time::Instant;

fn run(mmm: &dyn MatMatMul, packing: usize, a: &Tensor, b: &Tensor, m: usize, n: usize, iters: usize) -> (f64, Vec<f32>) {
    let (pack_a, pack_b) = &mmm.packings()[packing];
    let pa = pack_a.prepare_one(a, 1, 0).unwrap();
    let mut scratch = unsafe { mmm.allocate_scratch_space() };
    let mut c = Tensor::zero_dt(DatumType::F32, &[m, n]).unwrap();
    let t = Instant::now();
    for _ in 0..iters {
        let pb = pack_b.prepare_one(b, 0, 1).unwrap(); // activations packed each call
        unsafe {
            let store = mmm.c_view(Some(0), Some(1)).wrap(&c.view_mut());
            mmm.run_with_scratch_space(m, n, scratch.as_mut(), &[
                FusedSpec::AddMatMul { a: AsInputValue::Borrowed(&*pa), b: AsInputValue::Borrowed(&*pb), packing },
                FusedSpec::Store(store),
            ]).unwrap();
        }
    }
    let dt = t.elapsed().as_secs_f64() / iters as f64;
    let out = c.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    (dt, out)
}

fn main() {
    println!("amx {}", tract_linalg::x86_64::amx_bf16::has_amx_bf16());
    for &(m, k, n) in &[(1536usize, 384usize, 1500usize), (384, 1536, 1500), (384, 384, 1500)] {
        let wa: Vec<f32> = (0..m * k).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 0.1).collect();
        let xb: Vec<f32> = (0..k * n).map(|i| ((i * 104729 % 1000) as f32 / 1000.0 - 0.5)).collect();
        let a = tensor1(&wa).into_shape(&[m, k]).unwrap();
        let b = tensor1(&xb).into_shape(&[k, n]).unwrap();
        for _ in 0..2 {
            let (t0, r0) = run(&*avx512_mmm_f32_16x12.mmm(), 0, &a, &b, m, n, 10);
            let (t1, r1) = run(&*avx512amx_mmm_f32_16x16.mmm(), 1, &a, &b, m, n, 10);
            let mut maxrel = 0f64; let mut sum_ref=0f64;
            for (x, y) in r0.iter().zip(&r1) { maxrel = maxrel.max((*x as f64 - *y as f64).abs()); sum_ref += (*x as f64).abs(); }
            let fl = 2.0 * (m * k * n) as f64;
            println!("{m}x{k}x{n}: avx512 {:.2} ms ({:.0} GFLOP/s), amx {:.2} ms ({:.0} GFLOP/s), max abs diff {:.2e} (mean |ref| {:.2e})",
                t0*1e3, fl/t0/1e9, t1*1e3, fl/t1/1e9, maxrel, sum_ref / r0.len() as f64);
        }
    }
}
