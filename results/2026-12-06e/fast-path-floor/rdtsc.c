#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>
static double ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(){ for(int r=0;r<5;r++){ uint64_t acc=0; int n=10000000; double a=ns(); for(int i=0;i<n;i++) acc+=__rdtsc(); double b=ns();
 double c=ns(); for(int i=0;i<n/10;i++){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);acc+=t.tv_nsec;} double d=ns();
 printf("rdtsc %.1f ns  clock_gettime %.1f ns (%lu)\n",(b-a)/n,(d-c)/(n/10),acc&1);} }
