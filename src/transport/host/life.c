// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * life.c - the kernel's word, readable in shared memory, that the owner of
 * a context still exists.
 *
 * An initiator addresses the target's memory by pid (process_vm_writev),
 * and a reaped owner's pid may name another process: before every write it
 * must know that the owner has not exited. Asking the kernel (a pidfd
 * poll) costs a system call, a quarter of an 8-byte WRITE. Instead every
 * context's segment carries a "life marker" at SRDMA_SEG_LIFE_OFF: a
 * robust, process-shared mutex that one thread of the owner process, the
 * life thread below, locks when the context opens and unlocks when it
 * closes. A robust mutex sits on its holder's robust list, which the kernel
 * walks when that thread exits or execs: it stores FUTEX_OWNER_DIED into
 * the mutex word. It does so in exit_mm_release(), before the process
 * becomes a zombie, so before it can be reaped and its pid handed out
 * again. So one load tells an initiator what the pidfd would: the word
 * still holds the life thread's tid, so the pid still names the owner
 * (peer.c, srdma_peer_vm_rw()). An exec is seen as well, which neither a
 * pidfd nor the start time shows.
 *
 * The holder must be a thread that lives as long as the process and locks
 * and unlocks every marker itself (a robust mutex is unlocked only by its
 * holder, and its memory must stay mapped while it is on the holder's
 * list): hence one life thread per process, started with the first
 * context, blocked on a condition variable the rest of the time (no CPU,
 * architecture principle 2). It never exits; after fork() the child has
 * none (a new one starts with its first context), and the parent's
 * markers are not mapped in the child (segments are MADV_DONTFORK).
 * Without a life thread (pthread_create failed) a context has no marker
 * (life_off 0) and its initiators ask the kernel for every copy instead.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "core/core.h"
#include "util/log.h"

enum { LIFE_HOLD = 1, LIFE_RELEASE = 2 };

/* One request at a time: held by the caller for the whole exchange. */
static pthread_mutex_t life_call_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t life_cond = PTHREAD_COND_INITIALIZER;	/* life_lock */
static bool life_running;		/* life_lock: the thread exists */
static pthread_mutex_t *life_req;	/* life_lock: marker to act on */
static int life_op;			/* life_lock: LIFE_* */
static int life_ret;			/* life_lock: 0 or -errno */
static bool life_done;			/* life_lock: life_ret is the answer */

/* fork(): the child has no life thread and holds no marker. */
static void life_child(void)
{
	pthread_mutex_init(&life_call_lock, NULL);
	pthread_mutex_init(&life_lock, NULL);
	pthread_cond_init(&life_cond, NULL);
	life_running = false;
	life_req = NULL;
	life_done = false;
}

/* Registered before any thread can hold the locks (a pthread_once()
 * racing a fork() would leave the child's once stuck "in progress"). */
__attribute__((constructor)) static void life_register_atfork(void)
{
	pthread_atfork(NULL, NULL, life_child);
}

static void *life_main(void *arg)
{
	int r;

	(void)arg;
	pthread_mutex_lock(&life_lock);
	for (;;) {
		while (!life_req || life_done)
			pthread_cond_wait(&life_cond, &life_lock);
		/* Never blocks: a fresh marker is free, and one that is not
		 * (another process took it) is refused, not waited for. */
		if (life_op == LIFE_HOLD) {
			r = pthread_mutex_trylock(life_req);
			if (r == EOWNERDEAD) {
				pthread_mutex_consistent(life_req);
				r = 0;
			}
		} else {
			r = pthread_mutex_unlock(life_req);
		}
		life_ret = -r;
		life_done = true;
		pthread_cond_broadcast(&life_cond);
	}
	return NULL;
}

/* Start the life thread (life_lock), every signal blocked in it. */
static int life_start(void)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	r = pthread_create(&t, &a, life_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	pthread_setname_np(t, "srdma-life");
	life_running = true;
	return 0;
}

static int life_call(pthread_mutex_t *m, int op)
{
	int r = 0;

	pthread_mutex_lock(&life_call_lock);
	pthread_mutex_lock(&life_lock);
	if (!life_running)
		r = life_start();
	if (!r) {
		life_req = m;
		life_op = op;
		life_done = false;
		pthread_cond_broadcast(&life_cond);
		while (!life_done)
			pthread_cond_wait(&life_cond, &life_lock);
		r = life_ret;
		life_req = NULL;
	}
	pthread_mutex_unlock(&life_lock);
	pthread_mutex_unlock(&life_call_lock);
	return r;
}

int srdma_life_hold(pthread_mutex_t *m)
{
	int r = srdma_shm_mutex_init(m);

	if (!r)
		r = life_call(m, LIFE_HOLD);
	if (r)
		srdma_dbg("no life marker (%s): initiators will ask the "
			  "kernel for every copy", strerror(-r));
	return r;
}

int srdma_life_release(pthread_mutex_t *m)
{
	int r = life_call(m, LIFE_RELEASE);

	if (r)
		srdma_warn("life marker not released (%s): its segment stays "
			   "mapped", strerror(-r));
	return r;
}
