// gemm.rs — nnplug from Rust through its C ABI, no crates and no bindings generator: declares the
// few structs (DLPack's DLTensor, nnp_gemm_params) and functions it calls, then computes
// Y[2,2] = A[2,3] · B[3,2] on a device (default "cpu"; the first argument names another) with
// host arrays as tensors, and checks Y against the values worked out by hand.
//
//   rustc --edition 2021 -O examples/rust/gemm.rs -L build/lib \
//         -C link-arg=-Wl,-rpath,$PWD/build/lib -o gemm && ./gemm cpu
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

#[repr(C)] struct DLDevice { device_type: i32, device_id: i32 } // kDLCPU = 1
#[repr(C)] struct DLDataType { code: u8, bits: u8, lanes: u16 } // kDLFloat = 2
#[repr(C)] struct DLTensor { data: *mut c_void, device: DLDevice, ndim: i32, dtype: DLDataType,
                             shape: *const i64, strides: *const i64, byte_offset: u64 }
#[repr(C)] struct GemmParams { struct_size: usize, trans_a: i32, trans_b: i32, alpha: f64,
                               beta: f64 }
#[repr(C)] struct Device { _opaque: [u8; 0] }
#[repr(C)] struct Stream { _opaque: [u8; 0] }

#[link(name = "nnplug")]
extern "C" {
    fn nnp_get_device(name: *const c_char, out: *mut *mut Device) -> i32; // 0: NNP_STATUS_OK
    fn nnp_stream_create(device: *mut Device, out: *mut *mut Stream) -> i32;
    fn nnp_gemm(s: *mut Stream, p: *const GemmParams, a: *const DLTensor, b: *const DLTensor,
                c: *const DLTensor, y: *const DLTensor) -> i32;
    fn nnp_stream_synchronize(s: *mut Stream) -> i32;
    fn nnp_stream_destroy(s: *mut Stream) -> i32;
    fn nnp_last_error_message() -> *const c_char;
}

fn check(status: i32, call: &str) {
    if status != 0 {
        let why = unsafe { CStr::from_ptr(nnp_last_error_message()) };
        panic!("{call} failed (status {status}): {}", why.to_string_lossy());
    }
}

fn tensor(data: &mut [f32], shape: &[i64; 2]) -> DLTensor {
    DLTensor { data: data.as_mut_ptr().cast(), device: DLDevice { device_type: 1, device_id: 0 },
               ndim: 2, dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
               shape: shape.as_ptr(), strides: null(), byte_offset: 0 }
}

fn main() {
    let name = CString::new(std::env::args().nth(1).unwrap_or("cpu".into())).unwrap();
    let mut a = [1f32, 2., 3., 4., 5., 6.];
    let (mut b, mut y) = ([7f32, 8., 9., 10., 11., 12.], [0f32; 4]);
    let (sa, sb, sy) = ([2i64, 3], [3i64, 2], [2i64, 2]);
    let params = GemmParams { struct_size: std::mem::size_of::<GemmParams>(), trans_a: 0,
                              trans_b: 0, alpha: 1.0, beta: 1.0 };
    let (mut dev, mut stream) = (null_mut(), null_mut());
    unsafe {
        check(nnp_get_device(name.as_ptr(), &mut dev), "nnp_get_device");
        check(nnp_stream_create(dev, &mut stream), "nnp_stream_create");
        check(nnp_gemm(stream, &params, &tensor(&mut a, &sa), &tensor(&mut b, &sb), null(),
                       &tensor(&mut y, &sy)), "nnp_gemm");
        check(nnp_stream_synchronize(stream), "nnp_stream_synchronize");
        check(nnp_stream_destroy(stream), "nnp_stream_destroy");
    }
    assert_eq!(y, [58., 64., 139., 154.], "Y = A·B");
    println!("gemm.rs: Y = A·B = {y:?} on {}", name.to_string_lossy());
}
