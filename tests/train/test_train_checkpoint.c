/* Checkpoints (round trip, bit-identical resume, damaged files refused) and
 * the batch builder. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/mem_limit.h"
#include "tests/no_temporary.h"
#include "train/checkpoint.h"
#include "tests/train/train_util.h"

static char ck_dir[] = "/tmp/sente_ckpt_XXXXXX";

static void ck_setup(void)
{
	cr_assert(mkdtemp(ck_dir));
}

static void ck_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ck_dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(train_checkpoint, .init = ck_setup, .fini = ck_teardown);

static trainer *make_trainer(const nn_net *net, train_optimizer opt, int threads)
{
	char err[256];
	train_options o = train_options_default();
	o.batch = 16;
	o.threads = threads;
	o.optimizer = opt;
	o.lr = opt == TRAIN_OPTIMIZER_SGD ? 0.05 : 2e-3;
	o.clip_norm = 5;
	o.lr_schedule = TRAIN_LR_SCHEDULE_COSINE;
	o.lr_total_steps = 10;
	o.warmup_steps = 2;
	o.seed = 99;
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	return t;
}

/* N steps, checkpoint, M more steps recording the losses; then a fresh
 * trainer from the checkpoint runs the same M steps: every loss and every
 * final weight must be identical to the bit. */
static void check_resume_opp(train_optimizer opt, int threads, int opp)
{
	enum { NB = 4, N_STEPS = 3, M_STEPS = 4 };
	char err[256], path[256];
	nn_net *net = tu_net_heads(opp ? GAME_KIND_GO : GAME_KIND_CONNECT4, 7, 2, 16,
				   opp ? TU_OPP | TU_OWN | TU_SCORE : 0, 3);
	train_batch *b[NB];
	for (int i = 0; i < NB; i++)
		b[i] = tu_batch(net, 16, 40 + i, 0, 1);
	trainer *t = make_trainer(net, opt, threads);
	train_stats st;
	for (int i = 0; i < N_STEPS; i++)
		cr_assert_eq(trainer_step(t, b[i % NB], &st), 0, "%s", trainer_error(t));
	snprintf(path, sizeof(path), "%s/resume.ckpt", ck_dir);
	uint64_t pos = 12345;
	cr_assert_eq(trainer_checkpoint_save(t, path, &pos, sizeof(pos), err, sizeof(err)), 0, "%s",
		     err);
	double la[M_STEPS], lb[M_STEPS];
	uint64_t ra[M_STEPS], rb[M_STEPS];
	for (int i = 0; i < M_STEPS; i++) {
		cr_assert_eq(trainer_step(t, b[(N_STEPS + i) % NB], &st), 0);
		la[i] = st.loss;
		ra[i] = trainer_random(t);
	}
	nn_net *saved = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(saved, "%s", err);
	cr_assert_eq(saved->arch.opp_policy, opp);
	cr_assert_eq(saved->arch.ownership, opp);
	cr_assert_eq(saved->arch.score, opp);
	if (opp) {
		/* A trainer of the net without a head refuses the file. */
		nn_arch pa = saved->arch;
		pa.score = 0;
		nn_net *plain = nn_net_new(&pa, err, sizeof(err));
		cr_assert(plain, "%s", err);
		trainer *p = make_trainer(plain, opt, threads);
		cr_assert_neq(trainer_checkpoint_load(p, path, NULL, NULL, err, sizeof(err)), 0);
		cr_assert(strstr(err, "score head"), "%s", err);
		trainer_free(p);
		nn_net_free(plain);
	}
	trainer *u = make_trainer(saved, opt, threads);
	void *blob = NULL;
	size_t blob_len = 0;
	cr_assert_eq(trainer_checkpoint_load(u, path, &blob, &blob_len, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(blob_len, sizeof(pos));
	cr_assert_eq(memcmp(blob, &pos, sizeof(pos)), 0);
	cr_assert_eq(trainer_steps(u), N_STEPS);
	for (int i = 0; i < M_STEPS; i++) {
		cr_assert_eq(trainer_step(u, b[(N_STEPS + i) % NB], &st), 0);
		lb[i] = st.loss;
		rb[i] = trainer_random(u);
	}
	cr_assert_eq(memcmp(la, lb, sizeof(la)), 0, "losses differ after resume: %.17g vs %.17g",
		     la[0], lb[0]);
	cr_assert_eq(memcmp(ra, rb, sizeof(ra)), 0);
	cr_assert_eq(memcmp(trainer_net(t)->data, trainer_net(u)->data,
			    trainer_net(t)->n_floats * sizeof(float)), 0);
	free(blob);
	trainer_free(u);
	nn_net_free(saved);
	trainer_free(t);
	for (int i = 0; i < NB; i++)
		train_batch_free(b[i]);
	nn_net_free(net);
}

static void check_resume(train_optimizer opt, int threads)
{
	check_resume_opp(opt, threads, 0);
}

/* A Go net with the opponent-reply and ownership heads: the flags and the
 * heads' weights and moments come back, and the steps after resuming are
 * the same. */
Test(train_checkpoint, heads_resume_bit_identical)
{
	check_resume_opp(TRAIN_OPTIMIZER_SGD, 2, 1);
}

Test(train_checkpoint, sgd_resume_is_bit_identical)
{
	check_resume(TRAIN_OPTIMIZER_SGD, 2);
}

Test(train_checkpoint, adamw_resume_is_bit_identical)
{
	check_resume(TRAIN_OPTIMIZER_ADAMW, 2);
}

/* Reads a file whole. */
static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc(*len);
	cr_assert_eq(fread(p, 1, *len, f), *len);
	fclose(f);
	return p;
}

static void spit(const char *path, const unsigned char *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f);
	cr_assert_eq(fwrite(p, 1, len, f), len);
	fclose(f);
}

Test(train_checkpoint, damaged_files_are_refused_and_change_nothing)
{
	char err[256], path[256], bad[256];
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 4);
	train_batch *b = tu_batch(net, 16, 7, 0, 0);
	trainer *t = make_trainer(net, TRAIN_OPTIMIZER_SGD, 1);
	cr_assert_eq(trainer_step(t, b, NULL), 0);
	snprintf(path, sizeof(path), "%s/a.ckpt", ck_dir);
	snprintf(bad, sizeof(bad), "%s/bad.ckpt", ck_dir);
	cr_assert_eq(trainer_checkpoint_save(t, path, "x", 1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(access(path, F_OK), 0);
	cr_assert(no_temporary(path), "the temporary file is renamed away");
	cr_assert_eq(trainer_step(t, b, NULL), 0);
	nn_net *before = nn_net_clone(trainer_net(t));
	size_t len;
	unsigned char *p = slurp(path, &len);
	/* A flipped bit in the weights. */
	p[len / 2] ^= 0x10;
	spit(bad, p, len);
	p[len / 2] ^= 0x10;
	cr_assert_eq(trainer_checkpoint_load(t, bad, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "CRC"), "%s", err);
	/* Cut short. */
	spit(bad, p, len - 100);
	cr_assert_eq(trainer_checkpoint_load(t, bad, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "promises") && strstr(err, "earlier checkpoint"), "%s", err);
	spit(bad, p, 20);
	cr_assert_eq(trainer_checkpoint_load(t, bad, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "truncated"), "%s", err);
	/* Another version. */
	p[8] = 9;
	spit(bad, p, len);
	p[8] = 1;
	cr_assert_eq(trainer_checkpoint_load(t, bad, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "version 9"), "%s", err);
	/* A model file is not a checkpoint. */
	cr_assert_eq(nn_net_save(net, bad, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(trainer_checkpoint_load(t, bad, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "model file"), "%s", err);
	cr_assert_null(trainer_checkpoint_net(bad, err, sizeof(err)));
	/* Missing. */
	cr_assert_eq(trainer_checkpoint_load(t, "/nonexistent/x.ckpt", NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot open"), "%s", err);
	/* Another architecture. */
	nn_net *other = tu_net(GAME_KIND_CONNECT4, 0, 2, 8, 4);
	trainer *u = make_trainer(other, TRAIN_OPTIMIZER_SGD, 1);
	cr_assert_eq(trainer_checkpoint_load(u, path, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "trainer_checkpoint_net"), "%s", err);
	trainer_free(u);
	/* Another optimizer. */
	u = make_trainer(net, TRAIN_OPTIMIZER_ADAMW, 1);
	cr_assert_eq(trainer_checkpoint_load(u, path, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "optimizer"), "%s", err);
	trainer_free(u);
	nn_net_free(other);
	/* None of it touched t. */
	cr_assert_eq(memcmp(before->data, trainer_net(t)->data, before->n_floats * sizeof(float)), 0);
	cr_assert_eq(trainer_steps(t), 2);
	/* The good one still loads: back to step 1. */
	cr_assert_eq(trainer_checkpoint_load(t, path, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(trainer_steps(t), 1);
	free(p);
	nn_net_free(before);
	trainer_free(t);
	train_batch_free(b);
	nn_net_free(net);
}

Test(train_checkpoint, round_trip_keeps_weights_and_state)
{
	char err[256], path[256];
	nn_net *net = tu_net(GAME_KIND_GO, 5, 1, 8, 5);
	train_batch *b = tu_batch(net, 16, 8, 0, 0);
	trainer *t = make_trainer(net, TRAIN_OPTIMIZER_ADAMW, 1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(trainer_step(t, b, NULL), 0);
	(void)trainer_random(t);
	snprintf(path, sizeof(path), "%s/rt.ckpt", ck_dir);
	cr_assert_eq(trainer_checkpoint_save(t, path, NULL, 0, err, sizeof(err)), 0, "%s", err);
	nn_net *n2 = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(n2, "%s", err);
	cr_assert_eq(memcmp(n2->data, trainer_net(t)->data, n2->n_floats * sizeof(float)), 0);
	cr_assert_eq(n2->meta.train_step, 3);
	trainer *u = make_trainer(net, TRAIN_OPTIMIZER_ADAMW, 1);
	void *blob = (void *)1;
	size_t bl = 7;
	cr_assert_eq(trainer_checkpoint_load(u, path, &blob, &bl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bl, 0);
	free(blob);
	cr_assert_eq(trainer_steps(u), 3);
	cr_assert_eq(trainer_random(u), trainer_random(t));
	cr_assert_eq(memcmp(trainer_net(u)->data, trainer_net(t)->data, n2->n_floats * sizeof(float)), 0);
	trainer_free(u);
	trainer_free(t);
	nn_net_free(n2);
	train_batch_free(b);
	nn_net_free(net);
}

Test(train_batch, position_symmetry_permutes_planes_and_policy)
{
	static game g;
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 5;
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	cr_assert_eq(game_play(&g, 0), GAME_OK);  /* A1 */
	cr_assert_eq(game_play(&g, 7), GAME_OK);  /* C2 */
	nn_arch a = nn_arch_default(&gp, 1, 8);
	train_batch *b = train_batch_new(&a, 3, 1);
	cr_assert(b);
	int16_t mv[3] = { 1, 12, 25 }; /* B1, C3, pass */
	uint16_t vc[3] = { 30, 60, 10 };
	float *want = malloc(sizeof(float) * b->in_size);
	for (int sym = 0; sym < 8; sym++) {
		cr_assert_eq(train_batch_from_position(&g, a.encoding, sym, mv, vc, 3, -1.0f, b, 2), 0);
		cr_assert_eq(nn_encode_sym(&g, a.encoding, sym, want), a.in_planes);
		cr_assert_eq(memcmp(want, b->planes + 2 * b->in_size, sizeof(float) * b->in_size), 0);
		const float *p = b->policy + 2 * b->n_actions;
		double sum = 0;
		for (int i = 0; i < b->n_actions; i++)
			sum += p[i];
		cr_assert_float_eq(sum, 1.0, 1e-6);
		for (int k = 0; k < 3; k++)
			cr_assert_float_eq(p[game_symmetry_move(&g, sym, mv[k])], vc[k] / 100.0, 1e-6);
		cr_assert_float_eq(p[25], 0.1, 1e-6, "pass stays pass");
		cr_assert_eq(b->value[2], -1.0f);
		cr_assert(b->wdl[6] == 0 && b->wdl[7] == 0 && b->wdl[8] == 1);
	}
	/* Refusals: no visits, a move out of range, a slot out of range, a
	 * symmetry Go lacks, the wrong encoding. */
	vc[0] = vc[1] = vc[2] = 0;
	cr_assert_eq(train_batch_from_position(&g, a.encoding, 0, mv, vc, 3, 0, b, 0), -1);
	vc[0] = 1;
	mv[0] = 26;
	cr_assert_eq(train_batch_from_position(&g, a.encoding, 0, mv, vc, 1, 0, b, 0), -1);
	mv[0] = 3;
	cr_assert_eq(train_batch_from_position(&g, a.encoding, 0, mv, vc, 1, 0, b, 3), -1);
	cr_assert_eq(train_batch_from_position(&g, a.encoding, 8, mv, vc, 1, 0, b, 0), -1);
	cr_assert_eq(train_batch_from_position(&g, NN_ENC_C4, 0, mv, vc, 1, 0, b, 0), -1);
	free(want);
	train_batch_free(b);
}

/* A 5x5 position for a network of boards 5 and 7: the framed planes, and
 * its policy and ownership targets where the frame and the symmetry put
 * them (outside the board 0), the score over the frame's points. */
Test(train_batch, a_smaller_board_goes_into_the_frame)
{
	static game g;
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 5;
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	cr_assert_eq(game_play(&g, 6), GAME_OK);
	game_params frame = gp;
	frame.size = 7;
	nn_arch a = nn_arch_default(&frame, 1, 8);
	a.sizes = 1u << 5 | 1u << 7;
	nn_arch_set_heads(&a, NN_HEAD_OWN | NN_HEAD_SCORE);
	train_batch *b = train_batch_new(&a, 2, 0);
	cr_assert(b);
	cr_assert_eq(b->n_actions, 50);
	int16_t mv[2] = { 12, 25 }; /* C3, pass */
	uint16_t vc[2] = { 3, 1 };
	float owner[25], *want = malloc(sizeof(float) * b->in_size);
	for (int p = 0; p < 25; p++)
		owner[p] = p % 3 == 0 ? 1.0f : -1.0f;
	for (int sym = 0; sym < 8; sym += 3) {
		cr_assert_eq(train_batch_from_position(&g, a.encoding, sym, mv, vc, 2, 1.0f, b, 1), 0);
		cr_assert_eq(nn_encode_frame(&g, a.encoding, sym, 7, 7, want), a.in_planes);
		cr_assert_eq(memcmp(want, b->planes + b->in_size, sizeof(float) * b->in_size), 0);
		const float *pol = b->policy + b->n_actions;
		int c3 = nn_frame_action(&g, game_symmetry_move(&g, sym, 12), 7, 7);
		cr_assert_float_eq(pol[c3], 0.75, 1e-6, "sym %d", sym);
		cr_assert_float_eq(pol[49], 0.25, 1e-6, "the pass is the frame's");
		cr_assert_eq(train_batch_own_target(&g, sym, owner, b, 1), 0);
		const float *row = b->own + b->n_points;
		float side = -1; /* White to move: the owners from its side */
		int on = 0;
		for (int k = 0; k < 49; k++)
			on += row[k] != 0;
		cr_assert_eq(on, 25, "points outside the board keep 0");
		for (int p = 0; p < 25; p++)
			cr_assert_eq(row[nn_frame_action(&g, game_symmetry_move(&g, sym, p), 7, 7)],
				     side * owner[p]);
	}
	cr_assert_eq(train_batch_score_target(&g, 9.8, b, 0), 0);
	cr_assert_float_eq(b->score[0], -9.8 / 49, 1e-6);
	free(want);
	train_batch_free(b);
}

Test(train_batch, connect4_mirror)
{
	static game g;
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	cr_assert_eq(game_play(&g, 0), GAME_OK);
	nn_arch a = nn_arch_default(&gp, 1, 8);
	train_batch *b = train_batch_new(&a, 1, 0);
	int16_t mv[2] = { 1, 2 };
	uint16_t vc[2] = { 3, 1 };
	cr_assert_eq(train_batch_from_position(&g, a.encoding, 1, mv, vc, 2, 0.0f, b, 0), 0);
	cr_assert_float_eq(b->policy[5], 0.75, 1e-7);
	cr_assert_float_eq(b->policy[4], 0.25, 1e-7);
	cr_assert_eq(b->policy[1], 0.0f);
	/* The opponent's disc in column 0 lands in column 6 of plane 1. */
	cr_assert_eq(b->planes[42 + 6], 1.0f);
	train_batch_free(b);
}

/* A checkpoint whose header names 80 blocks x 1024 channels (about 6 GB of
 * weights) but holds 0 floats, with a valid CRC. */
#define HUGE_CKPT_HLEN (13 * 4 + 4 + NN_MAX_BLOCKS + 16 + 2 * NN_ID_LEN + 4 + 4 + 8 * 4 + 4 + 4)
static uint8_t huge_ckpt[16 + HUGE_CKPT_HLEN + 4];

static int huge_ckpt_child(void *arg)
{
	char err[512];
	nn_net *net = trainer_checkpoint_net(arg, err, sizeof(err));
	if (net)
		return 2;
	fprintf(stderr, "huge checkpoint: %s\n", err);
	return strstr(err, "weights") ? 0 : 3;
}

Test(train_checkpoint, a_header_is_checked_against_the_float_count_before_allocating)
{
	nn_arch a = nn_arch_lz(19, NN_MAX_BLOCKS, NN_MAX_CHANNELS);
	uint32_t f[13] = { (uint32_t)a.game, (uint32_t)a.board_w, (uint32_t)a.board_h,
			   (uint32_t)a.encoding, (uint32_t)a.in_planes, (uint32_t)a.blocks,
			   (uint32_t)a.channels, (uint32_t)a.se_channels, (uint32_t)a.policy_channels,
			   (uint32_t)a.policy_outputs, (uint32_t)a.value_channels,
			   (uint32_t)a.value_hidden, (uint32_t)a.value_outputs };
	uint8_t *b = huge_ckpt, *h = b + 16;
	uint32_t version = TRAIN_CKPT_VERSION, hlen = HUGE_CKPT_HLEN, world = 1;
	float scale = 1;
	memcpy(b, "SENTECKP", 8);
	memcpy(b + 8, &version, 4);
	memcpy(b + 12, &hlen, 4);
	memcpy(h, f, sizeof(f));
	/* bn_folded, block kinds, meta, optimizer, moments 0, step, rng,
	 * floats 0 and blob 0 stay zero; then the world and the loss scale. */
	memcpy(h + HUGE_CKPT_HLEN - 8, &world, 4);
	memcpy(h + HUGE_CKPT_HLEN - 4, &scale, 4);
	uint32_t crc = (uint32_t)crc32(0L, b, (uInt)(sizeof(huge_ckpt) - 4));
	memcpy(b + sizeof(huge_ckpt) - 4, &crc, 4);
	char path[256];
	snprintf(path, sizeof(path), "%s/huge.ckpt", ck_dir);
	spit(path, huge_ckpt, sizeof(huge_ckpt));
	int rc = mem_limit_run(huge_ckpt_child, path, (size_t)256 << 20);
	cr_assert_eq(rc, 0, "the header's architecture was allocated before its count was "
		     "checked (%d)", rc);
}
