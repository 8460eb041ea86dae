# `muninn generate --quantize q8 --q8-activations int8|fp32` from a one-token prompt, so that every
# model call is one row (the decode GEMV the option switches), with each call's logits dumped
# (--dump DIR --taps logits). Oracle for fp32: the same run with --kernels batch-invariant, whose
# one-row GEMM keeps the activations fp32 by another kernel (weights widened into a buffer, the
# dot-product order): fp32 must be within TOL of it and int8 must not (int8 rounds each activation
# by up to half a step of its block's amax/127, which moves these fixtures' logits by 7e-3 to 0.13;
# the two fp32 kernels differ by rounding, below 3e-6). Left out, the option is int8, bit for bit.
# The library-level oracle (the model built with host_backend::q8_int8_activations each way) is
# tests/test_frontend_options.cpp.
# Usage: cmake -DEXE=muninn -DNPY_COMPARE=npy_compare -DDATA=<tests/data> -DWORK=<dir> -P cli_q8_activations.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(TOL 1e-4)
set(calls 4)  # max-new-tokens 4: the prompt's call and one per new token but the last

# gen(<name> <model> <args>...): the run's logits under WORK/<name>, and its tokens in <name>_tokens.
function(gen name model)
  execute_process(COMMAND ${EXE} generate --model ${model} --tokens 19 --max-new-tokens ${calls} --quantize q8 ${ARGN}
                          --dump ${WORK}/${name} --taps logits
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "muninn generate ${ARGN} (rc ${rc}): ${err}")
  endif()
  set(${name}_tokens "${out}" PARENT_SCOPE)
endfunction()

# within(<a> <b> <tol>): 1 when every call's logits of runs a and b agree within tol, else 0.
function(within a b tol out)
  set(ok 1)
  math(EXPR last "${calls} - 1")
  foreach(c RANGE ${last})
    set(fa ${WORK}/${a}/logits.${c}.npy)
    if(NOT EXISTS ${fa})
      message(FATAL_ERROR "${fa} was not written")
    endif()
    execute_process(COMMAND ${NPY_COMPARE} ${fa} ${WORK}/${b}/logits.${c}.npy ${tol} RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
    if(NOT rc EQUAL 0)
      set(ok 0)
      set(detail "call ${c}: ${cmp}")
      break()
    endif()
  endforeach()
  set(${out} ${ok} PARENT_SCOPE)
  set(${out}_detail "${detail}" PARENT_SCOPE)
endfunction()

foreach(model llama/tiny_tied_mha huginn/tiny_f32)
  string(MAKE_C_IDENTIFIER ${model} m)
  gen(${m}_int8 ${DATA}/${model} --q8-activations int8)
  gen(${m}_fp32 ${DATA}/${model} --q8-activations fp32)
  gen(${m}_default ${DATA}/${model})
  gen(${m}_invariant ${DATA}/${model} --kernels batch-invariant)
  within(${m}_fp32 ${m}_invariant ${TOL} ok)
  if(NOT ok)
    message(FATAL_ERROR "${model}: --q8-activations fp32 is not the fp32-activation decode of --kernels batch-invariant "
                        "within ${TOL}: ${ok_detail}")
  endif()
  within(${m}_int8 ${m}_invariant ${TOL} ok)
  if(ok)
    message(FATAL_ERROR "${model}: --q8-activations int8 gives the fp32-activation logits (within ${TOL}): "
                        "the activations were not rounded to int8")
  endif()
  within(${m}_default ${m}_int8 0 ok)
  if(NOT ok)
    message(FATAL_ERROR "${model}: the default is not --q8-activations int8: ${ok_detail}")
  endif()
  if(NOT ${m}_int8_tokens STREQUAL ${m}_default_tokens)
    message(FATAL_ERROR "${model}: int8 printed ${${m}_int8_tokens}, the default ${${m}_default_tokens}")
  endif()
endforeach()
message(STATUS "--q8-activations fp32 within ${TOL} of the batch-invariant fp32 path, int8 not; default int8")
