# run_gemm.cmake — the CTest example.rust_gemm (examples/CMakeLists.txt): compiles gemm.rs with
# rustc against the build's libnnplug (no crates, no cargo) and runs it on DEVICE; the test
# passes when the program exits 0 having printed its result line.
#   cmake -DRUSTC=rustc -DSOURCE=gemm.rs -DLIBDIR=build/lib -DOUT=build/rust_gemm -DDEVICE=cpu
#         -P run_gemm.cmake
foreach(var RUSTC SOURCE LIBDIR OUT DEVICE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_gemm.cmake: -D${var}=... is missing")
  endif()
endforeach()
execute_process(
  COMMAND ${RUSTC} --edition 2021 -O -D warnings ${SOURCE} -L ${LIBDIR}
          -C link-arg=-Wl,-rpath,${LIBDIR} -o ${OUT}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rustc failed (${rc})")
endif()
execute_process(COMMAND ${OUT} ${DEVICE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "gemm.rs: Y = A·B = \\[58.0, 64.0, 139.0, 154.0\\] on ${DEVICE}")
  message(FATAL_ERROR "the Rust example failed (exit status ${rc})")
endif()
