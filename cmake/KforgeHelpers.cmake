# Helpers that give every unit one target, project warnings, and tests beside the code.

# Warnings for project code only (generated protobuf code is compiled without them).
set(KFORGE_WARNINGS -Wall -Wextra -Werror -Wno-unused-parameter)

# kforge_cc_library(NAME name SRCS ... DEPS ... [HDRS ...])
# Defines target kforge_<name> and alias kforge::<name>.
function(kforge_cc_library)
  cmake_parse_arguments(K "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  set(target kforge_${K_NAME})
  if(K_SRCS)
    add_library(${target} STATIC ${K_SRCS} ${K_HDRS})
    target_compile_options(${target} PRIVATE ${KFORGE_WARNINGS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} PUBLIC ${K_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} INTERFACE ${K_DEPS})
  endif()
  add_library(kforge::${K_NAME} ALIAS ${target})
endfunction()

# kforge_cc_binary(NAME exe SRCS ... DEPS ...)
function(kforge_cc_binary)
  cmake_parse_arguments(K "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${K_NAME} ${K_SRCS})
  target_compile_options(${K_NAME} PRIVATE ${KFORGE_WARNINGS})
  target_include_directories(${K_NAME} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(${K_NAME} PRIVATE ${K_DEPS})
endfunction()

# kforge_cc_test(NAME name SRCS ... DEPS ... [LABELS ...])
# A GoogleTest binary registered with CTest. Label "pg" marks tests that need PostgreSQL,
# "gpu" tests that need a GPU, "engine" tests that embed Python and torch.
function(kforge_cc_test)
  if(NOT KFORGE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(K "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${K_NAME} ${K_SRCS})
  target_compile_options(${K_NAME} PRIVATE ${KFORGE_WARNINGS})
  target_include_directories(${K_NAME} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(${K_NAME} PRIVATE ${K_DEPS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${K_NAME} COMMAND ${K_NAME})
  set_tests_properties(${K_NAME} PROPERTIES
    ENVIRONMENT "KFORGE_SOURCE_DIR=${PROJECT_SOURCE_DIR};KFORGE_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(K_LABELS)
    set_tests_properties(${K_NAME} PROPERTIES LABELS "${K_LABELS}")
  endif()
endfunction()
