# `muninn --help` and `muninn <command> --help` exit 0 and list every flag each command accepts;
# every flag a help text names is one the command accepts (not "unknown flag").
# Usage: cmake -DEXE=muninn -P cli_help.cmake
set(flags_info --model --config --ae --dtype --quantize)
set(flags_forward --model --tokens --prompt --steps --init-state --seed --output --device --dtype --quantize --q8-activations
    --routing --show-depths --dump --taps)
set(flags_generate --model --tokens --prompt --max-new-tokens --steps --init-state --seed --device --dtype --quantize
    --q8-activations --greedy --stop --exit --exit-threshold --min-steps --max-steps --check-every --kv-budget --kv-fallback --warm-start
    --draft-steps --lookahead --temperature --top-k --top-p --min-p --repetition-penalty --dump-states --show-steps
    --sampler --num-samples --max-draws --chunk-order --noise --uniforms --ae --stream --ignore-eos --chat --system
    --dump --taps)
set(flags_demo --model --problems --depths --exit-threshold --max-steps --seed --halt-threshold --dtype --quantize)
set(flags_score --model --data --steps --init-state --seed --routing --config --dtype --quantize)
set(flags_tokenize --model --text --chat --system)
set(flags_eval --model --data --metric --block-size --max-blocks --seed --verbose --steps --init-state --config --ae)
set(flags_ae --model --tokens --prompt --ae --dump --taps)
set(flags_solve --model --data --max-steps --halt --halt-threshold --show --limit --batch --dtype --quantize --dump --taps)
set(commands info forward generate score demo eval ae solve tokenize)

# help(<out> <arg>...): stdout of `EXE <arg>...`, which must exit 0 and print "usage: muninn".
function(help out)
  execute_process(COMMAND ${EXE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT text MATCHES "^usage: muninn")
    message(FATAL_ERROR "muninn ${ARGN}: exit code ${rc}, stdout:\n${text}\nstderr:\n${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# require_flag(<text> <flag> <what>): the flag appears in <text> as a whole word, or the script stops.
function(require_flag text flag what)
  string(REGEX MATCH "(^|[^a-z-])${flag}([^a-z-]|$)" found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${what} does not list ${flag}:\n${text}")
  endif()
endfunction()

help(top --help)
help(top_h -h)
foreach(cmd ${commands})
  help(text ${cmd} --help)
  if(NOT text MATCHES "^usage: muninn ${cmd} ")
    message(FATAL_ERROR "muninn ${cmd} --help does not start with its usage line:\n${text}")
  endif()
  foreach(flag ${flags_${cmd}})
    require_flag("${text}" ${flag} "muninn ${cmd} --help")
    require_flag("${top}" ${flag} "muninn --help")
  endforeach()
  # The help appends each number flag's range itself; a description must not state it again.
  string(REGEX MATCH "(>= [0-9.e+-]+|in [[][^]]+[]]), (>= [0-9.e+-]+|in [[][^]]+[]])" twice "${text}")
  if(twice)
    message(FATAL_ERROR "muninn ${cmd} --help states a range twice: '${twice}'")
  endif()
  # The converse: a flag the help names must not be rejected as unknown.
  string(REGEX MATCHALL "(^|[ [(|,])--[a-z][a-z-]+" named "${text}")
  list(TRANSFORM named REPLACE "^[ [(|,]" "")
  list(TRANSFORM named STRIP)
  list(REMOVE_DUPLICATES named)
  list(REMOVE_ITEM named --help)
  foreach(flag ${named})
    execute_process(COMMAND ${EXE} ${cmd} ${flag} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    if(e MATCHES "unknown flag")
      message(FATAL_ERROR "muninn ${cmd} --help names ${flag}, which the command rejects: ${e}")
    endif()
  endforeach()
endforeach()
# --help after other flags still prints the help, even when those flags are incomplete.
help(late generate --model /nonexistent --help)
message(STATUS "help ok: ${commands}")
