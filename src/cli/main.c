#include <stdio.h>
int main(void) { puts("xpool"); return 0; }
