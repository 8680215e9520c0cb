/* Point-to-point messages of train/comm.h on the in-process transports:
 * order per sender, tags and sources kept apart, probing without waiting,
 * a size mismatch refused. MPI's are exercised by tests/cli/test_run_mpi.c. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "train/comm.h"

Test(comm_p2p, single_sends_to_itself)
{
	comm *c = comm_new_single();
	cr_assert(c);
	int src = -1, tag = -1;
	size_t bytes = 0;
	cr_assert_eq(comm_probe(c, COMM_ANY, COMM_ANY, &src, &tag, &bytes), 0);
	cr_assert_eq(comm_send(c, "abc", 3, 0, 7), 0);
	cr_assert_eq(comm_send(c, "hello", 5, 0, 2), 0);
	cr_assert_eq(comm_send(c, NULL, 0, 0, 7), 0);
	/* Any tag: the oldest; a given tag: the oldest of that tag. */
	cr_assert_eq(comm_probe(c, COMM_ANY, COMM_ANY, &src, &tag, &bytes), 1);
	cr_assert(src == 0 && tag == 7 && bytes == 3);
	cr_assert_eq(comm_probe(c, 0, 2, &src, &tag, &bytes), 1);
	cr_assert(tag == 2 && bytes == 5);
	cr_assert_eq(comm_probe(c, 0, 9, NULL, NULL, NULL), 0);
	char buf[8] = { 0 };
	cr_assert_eq(comm_recv(c, buf, 5, 0, 2), 0);
	cr_assert_str_eq(buf, "hello");
	/* The wrong size is refused and the message stays. */
	cr_assert_eq(comm_recv(c, buf, 4, 0, 7), -1);
	cr_assert(strstr(comm_error(c), "3-byte"), "%s", comm_error(c));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(comm_recv(c, buf, 3, 0, 7), 0);
	cr_assert_str_eq(buf, "abc");
	cr_assert_eq(comm_probe(c, 0, 7, &src, &tag, &bytes), 1);
	cr_assert_eq(bytes, 0);
	cr_assert_eq(comm_recv(c, NULL, 0, 0, 7), 0);
	cr_assert_eq(comm_probe(c, COMM_ANY, COMM_ANY, &src, &tag, &bytes), 0);
	/* A message never received is freed with the comm. */
	cr_assert_eq(comm_send(c, "left", 4, 0, 1), 0);
	comm_free(c);
}

/* Ranks 1..3 each send 100 numbered messages to rank 0, which receives
 * them as they come (any source) and checks each sender's order. */
#define P2P_RANKS 4
#define P2P_MSGS 100

static void *sender(void *arg)
{
	comm *c = arg;
	for (int i = 0; i < P2P_MSGS; i++) {
		int v[2] = { comm_rank(c), i };
		if (comm_send(c, v, sizeof(v), 0, 3) != 0)
			return (void *)1;
	}
	/* Then wait for rank 0's answer, a message of another tag. */
	int ans = 0, src, tag;
	size_t bytes;
	while (comm_probe(c, 0, 4, &src, &tag, &bytes) == 0)
		;
	if (bytes != sizeof(ans) || comm_recv(c, &ans, sizeof(ans), 0, 4) != 0)
		return (void *)1;
	return ans == 100 * comm_rank(c) ? NULL : (void *)1;
}

Test(comm_p2p, thread_ranks_keep_each_senders_order)
{
	comm_group *g = comm_group_new(P2P_RANKS);
	cr_assert(g);
	pthread_t th[P2P_RANKS];
	for (int r = 1; r < P2P_RANKS; r++)
		cr_assert_eq(pthread_create(&th[r], NULL, sender, comm_group_rank(g, r)), 0);
	comm *c = comm_group_rank(g, 0);
	int next[P2P_RANKS] = { 0 };
	for (int n = 0; n < (P2P_RANKS - 1) * P2P_MSGS;) {
		int src, tag;
		size_t bytes;
		int rc = comm_probe(c, COMM_ANY, COMM_ANY, &src, &tag, &bytes);
		cr_assert(rc >= 0);
		if (rc == 0)
			continue;
		int v[2];
		cr_assert_eq(tag, 3);
		cr_assert_eq(bytes, sizeof(v));
		cr_assert_eq(comm_recv(c, v, sizeof(v), src, tag), 0);
		cr_assert_eq(v[0], src);
		cr_assert_eq(v[1], next[src], "rank %d: message %d came as %d", src, next[src], v[1]);
		next[src]++;
		n++;
	}
	for (int r = 1; r < P2P_RANKS; r++) {
		int ans = 100 * r;
		cr_assert_eq(comm_send(c, &ans, sizeof(ans), r, 4), 0);
	}
	for (int r = 1; r < P2P_RANKS; r++) {
		void *ret;
		pthread_join(th[r], &ret);
		cr_assert_null(ret, "rank %d", r);
	}
	comm_group_free(g);
}
