#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t stride=atoi(argv[1])*1024+4096, n=1024; int mode=atoi(argv[2]); int slabs=atoi(argv[3]);
  int pfd=syscall(SYS_pidfd_open,getpid(),0);
  double tg=0,tp=0,tt=0;
  for(int s=0;s<slabs;s++){
  char*p=mmap(0,stride*n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
  struct iovec iov[1024];
  double t0=now();
  for(size_t i=0;i<n;i++){iov[i].iov_base=p+i*stride;iov[i].iov_len=4096;}
  if(mode&1) syscall(SYS_process_madvise,pfd,iov,n,102,0);
  double t1=now();
  for(size_t i=0;i<n;i++){iov[i].iov_base=p+(i+1)*stride-4096;iov[i].iov_len=4096;}
  if(mode&2) syscall(SYS_process_madvise,pfd,iov,n,23,0);
  double t2=now();
  if(mode&4) for(size_t i=0;i<n;i++) p[(i+1)*stride-64]=1;
  double t3=now();
  tg+=t1-t0;tp+=t2-t1;tt+=t3-t2;}
  printf("per stack: guard %.0f ns populate %.0f ns touch %.0f ns\n",tg/slabs/n*1e9,tp/slabs/n*1e9,tt/slabs/n*1e9);
}
