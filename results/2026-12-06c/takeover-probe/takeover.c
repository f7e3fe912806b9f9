// Probe: how soon does a standby thread run on a busy CPU when a POSIX
// timer aimed at the busy thread fires and its handler futex-wakes the
// standby (local wakeup), against a direct cross-CPU futex wake.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/futex.h>
struct sched_attr{uint32_t size,sched_policy;uint64_t sched_flags;int32_t sched_nice;uint32_t sched_priority;uint64_t sched_runtime,sched_deadline,sched_period;uint32_t util_min,util_max;};
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

static atomic_int word;          // understudy waits while 0
static atomic_long t_start;      // when the wake was requested (ns)
static atomic_int busy_tid;
static atomic_int stop;
static long lat[100000];
static atomic_int nlat;
static int mode; // 0: timer on busy thread -> handler wakes; 1: direct cross-CPU futex wake
static long grace_ns = 10000;
static int short_slice = 1;

static long now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void fwake(void){syscall(SYS_futex,&word,FUTEX_WAKE_PRIVATE,1,0,0,0);}

static long hl[100000]; static atomic_int nh;
static void handler(int sig){(void)sig; {int i=atomic_fetch_add(&nh,1); if(i<100000) hl[i]=now_ns()-atomic_load(&t_start);} atomic_store(&word,1); fwake();}

static timer_t tm;static atomic_int tm_ready;
static void *busy(void*a){(void)a;pin(0);atomic_store(&busy_tid,(int)syscall(SYS_gettid));
  volatile unsigned long x=0; long next=0; int armed=0;
  while(!atomic_load(&stop)){ x++;
    if(mode==2 && atomic_load(&tm_ready) && (x&1023)==0){ long t=now_ns(); if(t>=next && armed<3000){ struct itimerspec its;memset(&its,0,sizeof its);its.it_value.tv_nsec=grace_ns;
      atomic_store(&t_start,t+grace_ns); timer_settime(tm,0,&its,0); next=t+500000+rand()%1000000; armed++; } } }
  return 0;}

static void *understudy(void*a){(void)a;pin(0);
  if(short_slice){struct sched_attr at;memset(&at,0,sizeof at);at.size=sizeof at;at.sched_policy=SCHED_OTHER;at.sched_runtime=100000;
   if(syscall(SYS_sched_setattr,0,&at,0))perror("sched_setattr");}
  for(;;){ while(atomic_load(&word)==0) syscall(SYS_futex,&word,FUTEX_WAIT_PRIVATE,0,0,0,0);
    if(atomic_load(&stop))return 0;
    long t=now_ns(); int i=atomic_fetch_add(&nlat,1); if(i<100000) lat[i]=t-atomic_load(&t_start);
    atomic_store(&word,0);}
}
static int cmp(const void*a,const void*b){long x=*(long*)a,y=*(long*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int n=argc>1?atoi(argv[1]):2000; mode=argc>2?atoi(argv[2]):0; grace_ns=argc>3?atol(argv[3]):10000; short_slice=argc>4?atoi(argv[4]):1;
  struct sigaction sa;memset(&sa,0,sizeof sa);sa.sa_handler=handler;sa.sa_flags=SA_RESTART;sigaction(SIGRTMIN+3,&sa,0);
  pthread_t b,u;pthread_create(&b,0,busy,0);pthread_create(&u,0,understudy,0);
  while(!atomic_load(&busy_tid))usleep(100);
  struct sigevent ev;memset(&ev,0,sizeof ev);ev.sigev_notify=SIGEV_THREAD_ID;ev.sigev_signo=SIGRTMIN+3;ev._sigev_un._tid=atomic_load(&busy_tid);
  if(timer_create(CLOCK_MONOTONIC,&ev,&tm)){perror("timer_create");return 1;}
  atomic_store(&tm_ready,1); if(mode==2){ sleep(4); n=0; }
  pin(1); prctl(PR_SET_TIMERSLACK,1,0,0,0); usleep(20000); srand(1);
  for(int i=0;i<n;i++){ usleep(200+rand()%1800);
    if(mode==0){ struct itimerspec its;memset(&its,0,sizeof its);its.it_value.tv_nsec=grace_ns;
      atomic_store(&t_start,now_ns()+grace_ns); timer_settime(tm,0,&its,0);} 
    else { atomic_store(&t_start,now_ns()); atomic_store(&word,1); fwake(); }
  }
  usleep(5000); atomic_store(&stop,1); atomic_store(&word,1); fwake(); pthread_join(b,0);pthread_join(u,0);
  {int h=atomic_load(&nh); if(h){qsort(hl,h,sizeof(long),cmp); printf("handler entry: n=%d p50 %.1f p90 %.1f p99 %.1f us\n",h,hl[h/2]/1e3,hl[h*9/10]/1e3,hl[h*99/100]/1e3);}}
  int m=atomic_load(&nlat); qsort(lat,m,sizeof(long),cmp);
  printf("mode=%s grace=%ldus slice=%s n=%d  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n", mode?"direct":"timer", grace_ns/1000, short_slice?"100us":"default", m,
    lat[m/2]/1e3,lat[m*9/10]/1e3,lat[m*99/100]/1e3,lat[m*999/1000]/1e3,lat[m-1]/1e3);
}
