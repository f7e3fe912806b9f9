#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static volatile int stop;
static void* spin(void*a){cpu_set_t s;CPU_ZERO(&s);CPU_SET(1,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);while(!stop);return 0;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); size_t n=2048, stride=260*1024;
  cpu_set_t s;CPU_ZERO(&s);CPU_SET(0,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  pthread_t t; pthread_create(&t,0,spin,0);
  char*p=mmap(0,stride*n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
  int pfd=syscall(SYS_pidfd_open,getpid(),0);
  double tot=0;
  for(int r=0;r<20;r++){
    for(size_t i=0;i<n;i++) p[(i+1)*stride-64]=1;
    double t0=now();
    if(mode==0){ for(size_t i=0;i<n;i++) madvise(p+i*stride,stride,MADV_DONTNEED); }
    else { struct iovec iov[1024]; for(size_t b=0;b<n;b+=1024){ for(size_t i=0;i<1024;i++){iov[i].iov_base=p+(b+i)*stride;iov[i].iov_len=stride;} long r=syscall(SYS_process_madvise,pfd,iov,1024,MADV_DONTNEED,0); if(r<0){perror("pm");return 1;} } }
    tot+=now()-t0;
  }
  stop=1; pthread_join(t,0);
  printf("mode %d: %.0f ns per stack\n",mode,tot/20/n*1e9);
}
