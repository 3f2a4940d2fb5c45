# check_missing_cases.cmake — the runner must fail, naming the paths it tried, when its case lists
# are missing (NNPLUG_CONFORMANCE_DATA = an empty folder), and must pass with
# --allow-missing-cases. Arguments: -DRUNNER=<nnplug-conformance> -DDATA=<empty folder>.
set(ENV{NNPLUG_CONFORMANCE_DATA} "${DATA}")
# tolerances.txt is missing too: without --allow-missing-cases the runner stops at once.
execute_process(COMMAND ${RUNNER} --backend reference "-tc=gradient activation"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "tolerances.txt not found")
  message(FATAL_ERROR "without tolerances.txt: rc=${rc}, expected a failure naming it:\n${out}${err}")
endif()
file(WRITE ${DATA}/tolerances.txt "# empty on purpose\n")
execute_process(COMMAND ${RUNNER} --backend reference "-tc=gradient activation"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "no case file for 'activation' \\(looked for ${DATA}/cases/ci/activation.txt\\)")
  message(FATAL_ERROR "without case lists: rc=${rc}, expected a failure naming the path:\n${out}${err}")
endif()
execute_process(COMMAND ${RUNNER} --backend reference "-tc=gradient activation" --allow-missing-cases
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE ${DATA}/tolerances.txt)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" MATCHES "--allow-missing-cases\\)")
  message(FATAL_ERROR "with --allow-missing-cases: rc=${rc}, expected a pass with a note:\n${out}${err}")
endif()
message(STATUS "the runner fails without its case lists and names the path; passes when allowed")
