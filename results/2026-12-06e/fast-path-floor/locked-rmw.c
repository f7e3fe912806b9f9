#include <stdio.h>
#include <stdint.h>
#include <time.h>
static double ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
volatile uint64_t x[64];
int main(){ for(int r=0;r<5;r++){ int n=20000000; double a=ns(); for(int i=0;i<n;i++){ __atomic_fetch_add(&x[0],1,__ATOMIC_SEQ_CST); x[8]++; x[16]++; } double b=ns();
 double c=ns(); for(int i=0;i<n;i++){ x[0]++; x[8]++; x[16]++;} double d=ns();
 printf("locked RMW + 2 plain %.2f ns, 3 plain %.2f ns -> RMW ~%.2f ns\n",(b-a)/n,(d-c)/n,(b-a)/n-(d-c)/n*2/3);} }
