use std::arch::asm;
use std::time::Instant;

#[repr(C, align(64))]
struct TileCfg { palette: u8, start_row: u8, _r: [u8; 14], colsb: [u16; 16], rows: [u8; 16], _r2: [u8; 16] }

fn main() {
    let r = unsafe { libc::syscall(libc::SYS_arch_prctl, 0x1023, 18) };
    println!("ARCH_REQ_XCOMP_PERM -> {r}");
    if r != 0 { return; }
    let mut cfg = TileCfg { palette: 1, start_row: 0, _r: [0; 14], colsb: [0; 16], rows: [0; 16], _r2: [0;16] };
    for t in 0..8 { cfg.colsb[t] = 64; cfg.rows[t] = 16; }
    let a = vec![0x3f80u16; 16 * 32 * 4]; // bf16 1.0
    let b = vec![0x3f80u16; 16 * 32 * 4];
    let mut c = vec![0f32; 16 * 16 * 4];
    let iters = 2_000_000u64;
    unsafe {
        asm!("ldtilecfg [{}]", in(reg) &cfg as *const TileCfg);
        asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3");
        asm!("tileloadd tmm4, [{a} + {s}*1]", "tileloadd tmm5, [{a2} + {s}*1]",
             "tileloadd tmm6, [{b} + {s}*1]", "tileloadd tmm7, [{b2} + {s}*1]",
             a = in(reg) a.as_ptr(), a2 = in(reg) a.as_ptr().add(512), b = in(reg) b.as_ptr(), b2 = in(reg) b.as_ptr().add(512), s = in(reg) 64usize);
    }
    let t = Instant::now();
    for _ in 0..iters {
        unsafe { asm!("tdpbf16ps tmm0, tmm4, tmm6", "tdpbf16ps tmm1, tmm4, tmm7", "tdpbf16ps tmm2, tmm5, tmm6", "tdpbf16ps tmm3, tmm5, tmm7"); }
    }
    let dt = t.elapsed().as_secs_f64();
    unsafe { asm!("tilestored [{c} + {s}*1], tmm0", c = in(reg) c.as_mut_ptr(), s = in(reg) 64usize); asm!("tilerelease"); }
    let flops = iters as f64 * 4.0 * 16.0 * 16.0 * 32.0 * 2.0;
    println!("AMX bf16: {:.1} GFLOP/s (c[0]={})", flops / dt / 1e9, c[0]);
    // AVX-512 f32 FMA peak
    let t = Instant::now();
    let n = 200_000_000u64;
    unsafe {
        asm!("vxorps zmm0, zmm0, zmm0","vxorps zmm1, zmm1, zmm1","vxorps zmm2, zmm2, zmm2","vxorps zmm3, zmm3, zmm3",
             "vxorps zmm4, zmm4, zmm4","vxorps zmm5, zmm5, zmm5","vxorps zmm6, zmm6, zmm6","vxorps zmm7, zmm7, zmm7",
             "2:", "vfmadd231ps zmm0, zmm8, zmm9","vfmadd231ps zmm1, zmm8, zmm9","vfmadd231ps zmm2, zmm8, zmm9","vfmadd231ps zmm3, zmm8, zmm9",
             "vfmadd231ps zmm4, zmm8, zmm9","vfmadd231ps zmm5, zmm8, zmm9","vfmadd231ps zmm6, zmm8, zmm9","vfmadd231ps zmm7, zmm8, zmm9",
             "dec {n}", "jnz 2b", n = inout(reg) n => _, out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _);
    }
    let dt = t.elapsed().as_secs_f64();
    println!("AVX-512 f32 FMA: {:.1} GFLOP/s", n as f64 * 8.0 * 32.0 / dt / 1e9);
}
