use tract_core::internal::*;
use tract_core::ops::einsum::EinSum;
use std::time::Instant;

fn main() -> TractResult<()> {
    env_logger::init();
    if std::env::var("AMX").is_ok() { tract_linalg::knobs::TRACT_AMX_BF16.set(true); }
    println!("amx knob {}", tract_linalg::knobs::TRACT_AMX_BF16.get());
    dbg_isa();
    let (m, k, n) = (1500usize, 384usize, 1536usize);
    let w: Vec<f32> = (0..k * n).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 0.1).collect();
    let x: Vec<f32> = (0..m * k).map(|i| ((i * 104729 % 1000) as f32 / 1000.0 - 0.5)).collect();
    let mut model = TypedModel::default();
    let src = if std::env::var("SYM").is_ok() { let sym = model.symbols.sym("S"); model.add_source("x", f32::fact(&[sym.to_dim(), k.to_dim()]))? } else { model.add_source("x", f32::fact([m, k]))? };
    let wt = if std::env::var("WIN").is_ok() { model.add_source("w", f32::fact([k, n]))? } else { model.add_const("w", tensor1(&w).into_shape(&[k, n])?)? };
    let out = model.wire_node("mm", EinSum::new("mk,kn->mn".parse()?, f32::datum_type()), &[src, wt])?;
    model.select_output_outlets(&out)?;
    let opt = model.into_optimized()?;
    for n in opt.nodes() { println!("node {} {:?}", n.name, n.op); }
    let plan = opt.into_runnable()?;
    let input = tensor1(&x).into_shape(&[m, k])?;
    let wten = tensor1(&w).into_shape(&[k, n])?;
    let args = || if std::env::var("WIN").is_ok() { tvec!(input.clone().into_tvalue(), wten.clone().into_tvalue()) } else { tvec!(input.clone().into_tvalue()) };
    let r = plan.run(args())?;
    let y = r[0].to_plain_array_view::<f32>()?;
    // reference for a few entries
    let mut maxrel = 0f32;
    for &(i, j) in &[(0usize, 0usize), (17, 100), (1499, 1535), (700, 3)] {
        let mut s = 0f64;
        for t in 0..k { s += x[i * k + t] as f64 * w[t * n + j] as f64; }
        let e = ((y[[i, j]] as f64 - s).abs() / s.abs().max(1e-3)) as f32;
        maxrel = maxrel.max(e);
    }
    let iters = 20;
    let t = Instant::now();
    for _ in 0..iters { let _ = plan.run(args())?; }
    let dt = t.elapsed().as_secs_f64() / iters as f64;
    println!("{} ms per product, {:.1} GFLOP/s, max rel err {maxrel:.2e}", dt * 1e3, 2.0 * (m * k * n) as f64 / dt / 1e9);
    Ok(())
}
#[allow(dead_code)]
fn dbg_isa() {
    println!("isa {:?}", tract_linalg::isa::native());
    if let Some(d) = tract_linalg::isa::Arch::X86_64.inspect() {
        let k = d.preferred_kernel(f32::datum_type(), Some(1500), Some(384), Some(1536));
        println!("preferred {:?}", k.map(|k| k.name().to_string()));
    }
}
