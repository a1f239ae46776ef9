# cmake -DINPUT=FILE -DOUTPUT=HEADER -DNAME=SYMBOL -P embed_binary.cmake
# Writes FILE's bytes as an 8-byte aligned array SYMBOL (the CUDA driver wants a fatbin aligned).
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(source "${INPUT}" NAME)
file(WRITE "${OUTPUT}"
  "// Generated from ${source} by embed_binary.cmake; do not edit.\n"
  "alignas(8) static const unsigned char ${NAME}[] = {${bytes}};\n")
