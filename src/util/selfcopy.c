// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * selfcopy.c - memcpy within our own address space, with a fault turned
 * into an error (selfcopy.h).
 *
 * Every byte the engine moves to or from memory of its own process - the
 * net responder writing an incoming RDMA WRITE into a registered buffer,
 * the net requester reading the payload it sends, a READ response landing
 * in the initiator's buffer, the host requester writing its own results -
 * went through process_vm_writev/readv on our own pid. That is the one
 * copy primitive that cannot raise a signal: an application that unmapped
 * or write-protected registered memory gets an error completion, where the
 * same misuse on hardware corrupts nothing and crashes nothing. But it is
 * a system call of 1-2 us on these machines, two per message on a
 * cross-host ping-pong (verbs-semantics: plain memcpy is acceptable for
 * validated non-ODP MRs; we keep the error for every MR kind instead).
 *
 * So the copy is a memcpy inside a guard: a per-thread frame with a
 * sigjmp_buf, published in initial-exec TLS (no allocation in the handler)
 * only while the memcpy runs. Our SIGSEGV and SIGBUS handler, installed
 * once, unwinds to that frame when the faulting thread has one, and
 * otherwise passes the signal on to whatever was installed before us
 * (AddressSanitizer's, the application's, shm_guard.c's SIGBUS repair, or
 * the default action), exactly as shm_guard.c chains. sigsetjmp does not
 * save the signal mask (no system call on the fast path); the handler
 * unblocks the signal itself before unwinding, since a handler before us
 * in the chain may have run with it blocked.
 *
 * An application (or a test harness such as cmocka, around every test)
 * may install its own SIGSEGV handler after ours, and put another back
 * later; a fault in our memcpy would then reach it and probably abort the
 * process. So the copy uses memcpy only while our handler is the
 * installed one; otherwise that copy goes through process_vm_*. How we
 * know: when the signal watch is active (sigwatch.c: the library's own
 * sigaction, signal, ..., or those of a preloaded libsrdma_sigwatch.so,
 * see every handler change made through the C library), the kernel is
 * asked (sigaction with no new action, 0.2-0.3 us
 * here) only when the watch's generation moved since our handlers were
 * last found installed, and every 1024 copies per thread as a backstop
 * for what the watch cannot see (a raw rt_sigaction system call: noticed
 * within 1024 copies of that thread). A copy with the generation
 * unchanged makes no system call. When the watch is not active
 * (libibverbs dlopen()ed RTLD_LOCAL, an interposer ahead of us,
 * SRDMA_SIGWATCH=0), every copy asks the kernel about SIGSEGV, SIGBUS
 * every 1024 copies only, and a receiver that lands a batch of packets
 * asks once per batch (srdma_self_copy_batch). A handler back at the
 * default action (whoever replaced ours let go of it) gets ours again,
 * chaining to the default action from then on.
 *
 * Off: SRDMA_SELF_COPY=0, or a failed sigaction, or a build with
 * AddressSanitizer/ThreadSanitizer unless SRDMA_SELF_COPY=1 (their
 * interceptors would check the application's memory as if the access were
 * ours, and TSan would report the application's polling of a buffer the
 * responder writes as a race, which hardware DMA never is).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/selfcopy.h"
#include "util/sigwatch.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SELF_COPY_DEFAULT false
#else
#define SELF_COPY_DEFAULT true
#endif
#define BUS_CHECK_EVERY 1024u
#define WATCH_RECHECK_EVERY 1024u

struct frame {
	sigjmp_buf env;
};

/* The copy this thread is in, if any: set around the memcpy only. */
static __thread struct frame *cur_frame
	__attribute__((tls_model("initial-exec")));
static __thread unsigned int since_check
	__attribute__((tls_model("initial-exec")));
/* srdma_self_copy_batch(): depth, and the check's answer in this batch
 * (-1: not asked yet). */
static __thread int batch_depth __attribute__((tls_model("initial-exec")));
static __thread int batch_ok __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct sigaction old_segv, old_bus; /* immutable after once */
static _Atomic bool guarded;		   /* installed: set once */
/* Reinstalled over SIG_DFL (is_ours): chain to the default action, not
 * to old_segv/old_bus. Set once per signal, before the reinstall. */
static _Atomic bool dfl_segv, dfl_bus;

static void chain(const struct sigaction *old, int sig, siginfo_t *si,
		  void *uc)
{
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction) {
			old->sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN &&
		   old->sa_handler) {
		old->sa_handler(sig);
		return;
	}
	/* The default action: return and fault again without us. */
	signal(sig, SIG_DFL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct frame *f = cur_frame;
	sigset_t s;

	if (f) {
		cur_frame = NULL;
		sigemptyset(&s);
		sigaddset(&s, sig);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		siglongjmp(f->env, 1);
	}
	if (atomic_load_explicit(sig == SIGBUS ? &dfl_bus : &dfl_segv,
				 memory_order_relaxed))
		signal(sig, SIG_DFL);	/* return: fault again, by default */
	else
		chain(sig == SIGBUS ? &old_bus : &old_segv, sig, si, uc);
}

/* The action we install: on_fault, on the alternate stack if any, and
 * not blocking the signal while it runs (we unwind out of it). */
static void our_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = on_fault;
	sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa->sa_mask);
}

static void install(void)
{
	const char *e = getenv("SRDMA_SELF_COPY");
	bool on = e && *e ? strcmp(e, "0") != 0 : SELF_COPY_DEFAULT;
	struct sigaction sa;

	if (!on)
		return;
	our_action(&sa);
	if (sigaction(SIGSEGV, &sa, &old_segv)) {
		srdma_info("no memcpy guard (SIGSEGV: %s): own memory moves with process_vm_*",
			   strerror(errno));
		return;
	}
	if (sigaction(SIGBUS, &sa, &old_bus)) {
		srdma_info("no memcpy guard (SIGBUS: %s): own memory moves with process_vm_*",
			   strerror(errno));
		sigaction(SIGSEGV, &old_segv, NULL);
		return;
	}
	atomic_store(&guarded, true);
}

bool srdma_self_copy_guarded(void)
{
	pthread_once(&once, install);
	return atomic_load_explicit(&guarded, memory_order_relaxed);
}

static void handler_set(int sig)
{
	struct sigaction sa;

	our_action(&sa);
	sigaction(sig, &sa, NULL);
}

/* Ours installed? Back to the default action (whoever replaced ours has
 * let go, e.g. a test harness after its test): then ours again. */
static bool is_ours(int sig)
{
	struct sigaction a;

	if (sigaction(sig, NULL, &a))
		return false;
	if ((a.sa_flags & SA_SIGINFO) && a.sa_sigaction == on_fault)
		return true;
	if (a.sa_flags & SA_SIGINFO || a.sa_handler != SIG_DFL)
		return false;
	atomic_store(sig == SIGBUS ? &dfl_bus : &dfl_segv, true);
	handler_set(sig);
	return true;
}

/* The watch's generation at which both our handlers were last found
 * installed; ~0: never. Stores may go back to an older value (two
 * threads racing), which only costs one more query. */
static _Atomic unsigned long verified_gen = ~0UL;
static _Atomic unsigned long queries;	/* sigaction queries: tests */

/* Is our handler the one installed, for this copy? */
static bool still_ours(void)
{
	static _Atomic bool told;
	unsigned long g;

	if (srdma_sigwatch_active()) {
		g = srdma_sigwatch_generation();
		if (g == atomic_load_explicit(&verified_gen,
					      memory_order_relaxed) &&
		    ++since_check % WATCH_RECHECK_EVERY)
			return true;
		atomic_fetch_add_explicit(&queries, 2, memory_order_relaxed);
		if (is_ours(SIGSEGV) && is_ours(SIGBUS)) {
			atomic_store_explicit(&verified_gen, g,
					      memory_order_relaxed);
			return true;
		}
		/* Ask again at every copy until ours is back. */
		atomic_store_explicit(&verified_gen, ~0UL,
				      memory_order_relaxed);
		goto not_ours;
	}
	atomic_fetch_add_explicit(&queries, 1, memory_order_relaxed);
	if (is_ours(SIGSEGV) &&
	    (++since_check % BUS_CHECK_EVERY || is_ours(SIGBUS)))
		return true;
not_ours:
	if (!atomic_exchange_explicit(&told, true, memory_order_relaxed))
		srdma_info("our SIGSEGV/SIGBUS handler is not installed (the application replaced it): own memory moves with process_vm_* while it is not");
	return false;
}

int srdma_thread_create_nosig(pthread_t *t, void *(*fn)(void *), void *arg)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE,
				      SIGTRAP, SIGSYS };
	sigset_t mask, old;
	unsigned int i;
	int ret;

	sigfillset(&mask);
	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&mask, faults[i]);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

void srdma_self_copy_batch(bool begin)
{
	if (begin) {
		if (!batch_depth++)
			batch_ok = -1;
	} else if (batch_depth) {
		batch_depth--;
	}
}

/* still_ours(), asked once per batch. */
static bool ours_now(void)
{
	if (!batch_depth || srdma_sigwatch_active())
		return still_ours();	/* watched: as cheap as the cache */
	if (batch_ok < 0)
		batch_ok = still_ours();
	return batch_ok;
}

/* memcpy between the lists under the guard; -1/EFAULT on a fault. */
static ssize_t copy_guarded(const struct iovec *dst, unsigned long nd,
			    const struct iovec *src, unsigned long ns)
{
	struct frame f;
	/* volatile: read again after a siglongjmp back here */
	volatile size_t total = 0;
	unsigned long i = 0, j = 0;
	size_t io = 0, jo = 0, n;

	if (sigsetjmp(f.env, 0)) {
		atomic_signal_fence(memory_order_seq_cst);
		errno = EFAULT;
		return -1;
	}
	cur_frame = &f;
	atomic_signal_fence(memory_order_seq_cst);
	while (i < nd && j < ns) {
		n = dst[i].iov_len - io;
		if (n > src[j].iov_len - jo)
			n = src[j].iov_len - jo;
		if (n) {
			memcpy((char *)dst[i].iov_base + io,
			       (const char *)src[j].iov_base + jo, n);
			total += n;
		}
		io += n;
		jo += n;
		if (io == dst[i].iov_len) {
			i++;
			io = 0;
		}
		if (jo == src[j].iov_len) {
			j++;
			jo = 0;
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	cur_frame = NULL;
	return (ssize_t)total;
}

static size_t total(const struct iovec *v, unsigned long n)
{
	size_t t = 0;

	while (n--)
		t += v[n].iov_len;
	return t;
}

ssize_t srdma_self_vm_rw(const struct iovec *liov, unsigned long nl,
			 const struct iovec *riov, unsigned long nr,
			 bool write)
{
	size_t want;
	ssize_t got;

	if (srdma_self_copy_guarded() && ours_now()) {
		if (write)
			return copy_guarded(riov, nr, liov, nl);
		return copy_guarded(liov, nl, riov, nr);
	}
	if (write)
		got = process_vm_writev(getpid(), liov, nl, riov, nr, 0);
	else
		got = process_vm_readv(getpid(), liov, nl, riov, nr, 0);
	if (got < 0)
		return got;
	want = total(liov, nl) < total(riov, nr) ? total(liov, nl) :
						   total(riov, nr);
	if ((size_t)got < want) {
		errno = EFAULT;	/* a fault part-way, as copy_guarded() says */
		return -1;
	}
	return got;
}

unsigned long srdma_self_copy_queries(void)
{
	return atomic_load_explicit(&queries, memory_order_relaxed);
}
