# embed.cmake: IN (a file) as a C array NAME in OUT, NUL-terminated, and
# NAME_len its size without the NUL. Used for the dashboard (src/server/ui),
# which the controller serves from memory.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake; do not edit */\n"
  "const unsigned char ${NAME}[] = {${bytes}0x00};\n"
  "const unsigned long ${NAME}_len = sizeof(${NAME}) - 1;\n")
