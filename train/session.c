/* session.c: `sente train`'s learner session over its ranks (session.h). */
#include "train/session.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "data/store.h"
#include "engine/clock.h"
#include "engine/progress.h"
#include "engine/game_desc.h"
#include "nn/cuda/cuda.h"
#include "train/launch.h"
#include "train/rundir.h"

train_session_options train_session_options_default(void)
{
	train_session_options o;
	memset(&o, 0, sizeof(o));
	o.dir = "runs/connect4";
	o.steps = 1000;
	o.batch = 256;
	o.lr = 0.02;
	o.value_q_weight = learner_options_default().value_q_weight;
	o.value_lambda = learner_options_default().value_lambda;
	o.own_weight = -1;
	o.export_steps = 100;
	o.game = game_desc_by_name("connect4")->defaults;
	o.blocks = 4;
	o.channels = 48;
	o.seed = 1;
	o.learner = &learner_cpu;
	o.precision = NN_DTYPE_FP16;
	return o;
}

/* A line on the log, "sente train: " first. */
static void say(const train_session_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const train_session_options *o, const char *fmt, ...)
{
	if (!o->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("sente train: ", o->log);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fputc('\n', o->log);
	fflush(o->log);
}

static bool stopped(const train_session_options *o)
{
	return o->stop && *o->stop;
}

/* Rank 0's set-up, broadcast to the others: the network's architecture and
 * whether rank 0 got that far. */
typedef struct setup_msg {
	int32_t ok;      /* 0: rank 0 failed, everyone stops */
	int32_t resumed; /* 1: from the checkpoint */
	nn_arch arch;    /* the network */
} setup_msg;

/* The step loop's running sums between exports. */
enum { SUM_LOSS, SUM_POLICY, SUM_VALUE, SUM_GRAD, SUM_DATA, SUM_COMPUTE, SUM_COMM, SUM_N };

/* Rank 0: the metrics, the model and the checkpoint of an export. 0, or -1
 * with the message said. */
static int export_now(const train_session_options *o, rundir *rd, learner *L, int64_t *model_id,
		      const double *sums, int since, const train_stats *ts, int K)
{
	char err[8192];
	int64_t step = learner_steps(L);
	double tot = sums[SUM_DATA] + sums[SUM_COMPUTE] + sums[SUM_COMM];
	const char *names[] = { "loss", "policy_loss", "value_loss", "grad_norm", "lr",
				"train_samples_per_s", "train_data_seconds",
				"train_compute_seconds", "train_comm_seconds", "train_ranks",
				"train_loss_scale", "train_skipped_steps" };
	double vals[] = { sums[SUM_LOSS] / since, sums[SUM_POLICY] / since, sums[SUM_VALUE] / since,
			  sums[SUM_GRAD] / since, ts->lr, since * o->batch / tot, sums[SUM_DATA],
			  sums[SUM_COMPUTE], sums[SUM_COMM], K, ts->loss_scale,
			  (double)ts->skipped_steps };
	store_add_metrics(rd->db, step, names, vals, 12);
	int rc = 0;
	if (rundir_save(rd, L, model_id, "sente train", err, sizeof(err)) != 0) {
		say(o, "%s", err);
		rc = -1;
	}
	if (!o->quiet)
		say(o, "step %lld: model %lld, loss %.3f (policy %.3f, value %.3f), %.0f samples/s "
		       "over %d rank%s; data %.0f%%, compute %.0f%%, communication %.0f%%",
		    (long long)step, (long long)*model_id, vals[0], vals[1], vals[2], vals[5], K,
		    K == 1 ? "" : "s", 100 * sums[SUM_DATA] / tot, 100 * sums[SUM_COMPUTE] / tot,
		    100 * sums[SUM_COMM] / tot);
	return rc;
}

/* Rank 0: the run's folder and the network (checkpoint or new) into msg. */
static rundir *lead_setup(const train_session_options *o, nn_net **net, setup_msg *msg)
{
	char err[8192];
	rundir *rd = rundir_open(o->dir, err, sizeof(err));
	if (!rd) {
		say(o, "%s", err);
		return NULL;
	}
	bool resumed;
	int heads = (o->opp_weight > 0 ? NN_HEAD_OPP : 0) | (o->own_weight > 0 ? NN_HEAD_OWN : 0) |
		    (o->score_weight > 0 ? NN_HEAD_SCORE : 0);
	*net = rundir_learner_net(rd, &o->game, o->blocks, o->channels, o->se_channels, heads, 0,
				  o->seed, &resumed, err, sizeof(err));
	msg->resumed = resumed;
	if (!*net) {
		say(o, "%s", err);
		return rd;
	}
	msg->arch = (*net)->arch;
	msg->ok = 1;
	return rd;
}

/* One rank's session. */
typedef struct session {
	const train_session_options *o;
	comm *c;          /* host traffic */
	comm *nccl;       /* the CUDA learner's gradients over several ranks, or NULL */
	int rank, K;      /* this rank, the ranks */
	int share;        /* positions per rank and step */
	bool lead;        /* rank 0: reads the store, writes the files */
	rundir *rd;       /* rank 0: the run's folder */
	nn_net *net;      /* the network the learner was made from */
	learner *L;       /* the learner */
	setup_msg msg;    /* rank 0's set-up, as every rank heard it */
	int64_t window;   /* positions in the window */
	int64_t last_id;  /* newest game in the window */
	int64_t model_id; /* rank 0: the newest model */
	/* Set where every rank leaves together; other failures are this
	 * rank's alone and abort the job rather than leave the others
	 * waiting in a collective. */
	bool together;
} session;

/* Rank 0's folder and network, heard by every rank; the learner on every
 * rank, ready and equal to rank 0's; the window filled. 0, or an outcome. */
static int session_start(session *s)
{
	const train_session_options *o = s->o;
	char err[8192];
	bool cuda = o->learner == &learner_cuda;
	s->together = true;
	if (o->batch % s->K != 0) {
		if (s->lead)
			say(o, "--batch %d does not split evenly over %d ranks (see 'sente train --help')",
			    o->batch, s->K);
		return TRAIN_SESSION_USAGE;
	}
	s->share = o->batch / s->K;
	if (s->share < 2) {
		if (s->lead)
			say(o, "--batch %d over %d ranks leaves %d position%s per rank; batch norm "
			       "needs at least 2 (see 'sente train --help')",
			    o->batch, s->K, s->share, s->share == 1 ? "" : "s");
		return TRAIN_SESSION_USAGE;
	}
	s->together = false;
	if (s->lead)
		s->rd = lead_setup(o, &s->net, &s->msg);
	if (comm_broadcast(s->c, &s->msg, sizeof(s->msg), 0) != 0) {
		say(o, "rank %d: %s", s->rank, comm_error(s->c));
		return TRAIN_SESSION_FAILED;
	}
	s->together = true;
	if (!s->msg.ok)
		return TRAIN_SESSION_FAILED;
	s->together = false;
	if (!s->lead) {
		/* Weights come from rank 0 with the rest of the state. */
		s->net = nn_net_new(&s->msg.arch, err, sizeof(err));
		if (!s->net) {
			say(o, "rank %d: %s", s->rank, err);
			return TRAIN_SESSION_FAILED;
		}
	}

	game_params gp = nn_arch_params(&s->msg.arch);
	learner_options lo = learner_options_default();
	lo.train.batch = s->share;
	lo.train.lr = o->lr;
	lo.value_q_weight = (float)o->value_q_weight;
	lo.value_lambda = (float)o->value_lambda;
	lo.value_cut = o->value_cut != 0;
	lo.train.opp_weight = o->opp_weight;
	/* Not given (< 0): a network with the ownership head trains it at
	 * sente run's weight. */
	lo.train.own_weight = o->own_weight >= 0 ? o->own_weight : s->msg.arch.ownership ? 1.5 : 0;
	lo.train.score_weight = o->score_weight;
	lo.train.seed = o->seed;
	lo.train.threads = o->threads;
	lo.window = s->window = o->window > 0 ? o->window : game_run_defaults_of(&gp).window;
	lo.device = o->n_gpus ? o->gpus[0] : 0;
	lo.precision = o->precision;
	lo.micro_batch = o->micro_batch;
	s->L = learner_new(o->learner, s->net, &lo, err, sizeof(err));
	int ok = s->L != NULL;
	if (!ok) {
		if (s->K > 1)
			say(o, "rank %d: %s learner: %s%s", s->rank, cuda ? "the GPU" : "the", err,
			    cuda ? " (--backend cpu trains on the CPU)" : "");
		else
			say(o, "%s learner: %s%s", cuda ? "the GPU" : "the", err,
			    cuda ? " (--backend cpu trains on the CPU)" : "");
	} else if (s->lead && s->msg.resumed &&
		   learner_checkpoint_load(s->L, s->rd->ckpt, err, sizeof(err)) != 0) {
		say(o, "%s", err);
		ok = 0;
	}
	/* Every rank learns whether every rank is ready (a sum of flags). */
	float ready = (float)ok;
	if (comm_allreduce(s->c, &ready, 1, COMM_OP_SUM) != 0)
		return TRAIN_SESSION_FAILED;
	if (ready != (float)s->K) {
		s->together = true;
		return TRAIN_SESSION_FAILED;
	}
	learner_set_comm(s->L, cuda ? s->nccl : s->c);
	if (learner_broadcast(s->L, 0) != 0) {
		say(o, "rank %d: %s", s->rank, learner_error(s->L));
		return TRAIN_SESSION_FAILED;
	}
	if (s->lead) {
		if (rundir_first_model(s->rd, s->L, &s->model_id, "sente train", err, sizeof(err)) != 0)
			say(o, "%s", err);
		int ck_world = learner_checkpoint_world(s->L);
		if (s->msg.resumed && ck_world != s->K)
			say(o, "the checkpoint was written by %d rank%s, resuming on %d (global batch %d "
			       "= %d x %d; batch norm and the gradient are the global batch's, so the "
			       "steps are the same)",
			    ck_world, ck_world == 1 ? "" : "s", s->K, o->batch, s->K, s->share);
	}

	/* The window. */
	int added = 0;
	if (learner_refill(s->L, s->lead ? s->rd->db : NULL, s->c, s->window, &s->last_id, &added,
			   err, sizeof(err)) != 0) {
		say(o, "rank %d: reading the games: %s", s->rank, err);
		s->together = added == -1;
		return TRAIN_SESSION_FAILED;
	}
	if (learner_positions(s->L) < o->batch) {
		s->together = true; /* every rank holds the same window */
		if (s->lead)
			say(o, "%s holds %lld recorded positions, fewer than the batch of %d: play games "
			       "first (sente selfplay --db %s/sente.db, or sente run)",
			    o->dir, (long long)learner_positions(s->L), o->batch, o->dir);
		return TRAIN_SESSION_FAILED;
	}
	if (s->lead && !o->quiet)
		say(o, "%s in %s, network %dx%d, %s at step %lld; %d rank%s (%s), %s, batch %d (%d per "
		       "rank), window %lld positions",
		    game_kind_name(s->msg.arch.game), o->dir, s->msg.arch.blocks, s->msg.arch.channels,
		    s->msg.resumed ? "resumed" : "new", (long long)learner_steps(s->L), s->K,
		    s->K == 1 ? "" : "s", comm_name(s->c), learner_describe(s->L), o->batch, s->share,
		    (long long)learner_positions(s->L));
	return TRAIN_SESSION_OK;
}

/* The steps, rank 0 deciding each time whether to go on; an export and a
 * refill every export_steps steps and at the end. An outcome. */
static int session_steps(session *s)
{
	const train_session_options *o = s->o;
	char err[8192];
	bool failed = false; /* rank 0 could not write */
	bool stop_asked = false;
	double t_start = clock_now(), t_end = o->minutes > 0 ? t_start + o->minutes * 60 : 0;
	/* Rank 0's progress line, against --steps and --minutes. */
	progress prog;
	progress_init(&prog, s->lead && !o->quiet && !o->json ? o->log : NULL,
		      o->minutes > 0 ? o->minutes * 60 : 0, (double)o->steps);
	double sums[SUM_N] = { 0 };
	int since = 0;
	train_stats ts = { 0 };
	for (int64_t n = 0;; n++) {
		int32_t go = n < o->steps && !stopped(o) && !failed &&
			     !(t_end > 0 && clock_now() >= t_end);
		if (s->lead && !go && stopped(o))
			stop_asked = true;
		if (comm_broadcast(s->c, &go, sizeof(go), 0) != 0) {
			say(o, "rank %d: %s", s->rank, comm_error(s->c));
			return TRAIN_SESSION_FAILED;
		}
		bool last = !go;
		if (go) {
			double t0 = clock_now();
			if (learner_step(s->L, o->batch, s->rank * s->share, &ts) != 0) {
				progress_clear(&prog);
				say(o, "rank %d: step failed: %s", s->rank, learner_error(s->L));
				return TRAIN_SESSION_FAILED;
			}
			double t2 = clock_now();
			double vals[SUM_N] = { ts.loss, ts.policy_loss, ts.value_loss, ts.grad_norm,
					       ts.data_seconds, ts.compute_seconds, ts.comm_seconds };
			for (int k = 0; k < SUM_N; k++)
				sums[k] += vals[k];
			since++;
			if (s->lead && o->json) {
				fprintf(o->json,
					"{\"step\":%lld,\"ranks\":%d,\"batch\":%d,\"samples_per_s\":%.1f,"
					"\"loss\":%.5f,\"policy_loss\":%.5f,\"value_loss\":%.5f,"
					"\"grad_norm\":%.4f,\"lr\":%.6g,\"data_s\":%.5f,\"compute_s\":%.5f,"
					"\"comm_s\":%.5f,\"loss_scale\":%g,\"skipped_steps\":%lld}\n",
					(long long)ts.step, s->K, o->batch, o->batch / (t2 - t0), ts.loss,
					ts.policy_loss, ts.value_loss, ts.grad_norm, ts.lr,
					ts.data_seconds, ts.compute_seconds, ts.comm_seconds,
					ts.loss_scale, (long long)ts.skipped_steps);
				fflush(o->json);
			}
			double tot = sums[SUM_DATA] + sums[SUM_COMPUTE] + sums[SUM_COMM];
			if (tot > 0)
				progress_update(&prog, (double)(n + 1), false,
						"step %lld  loss %.3f (policy %.3f, value %.3f)  "
						"%.0f samples/s  data %.0f%%, compute %.0f%%, "
						"communication %.0f%%",
						(long long)ts.step, ts.loss, ts.policy_loss,
						ts.value_loss, since * o->batch / tot,
						100 * sums[SUM_DATA] / tot, 100 * sums[SUM_COMPUTE] / tot,
						100 * sums[SUM_COMM] / tot);
		}
		if (!(since > 0 && (last || since >= o->export_steps))) {
			if (last)
				break;
			continue;
		}
		/* Rank 0 writes; then everyone takes the new games. A write
		 * that fails stops every rank at the next step. */
		progress_clear(&prog);
		if (s->lead && export_now(o, s->rd, s->L, &s->model_id, sums, since, &ts, s->K) != 0)
			failed = true;
		memset(sums, 0, sizeof(sums));
		since = 0;
		if (last)
			break;
		int added = 0;
		if (learner_refill(s->L, s->lead ? s->rd->db : NULL, s->c, s->window, &s->last_id,
				   &added, err, sizeof(err)) != 0) {
			progress_clear(&prog);
			say(o, "rank %d: reading the games: %s", s->rank, err);
			s->together = added == -1;
			return TRAIN_SESSION_FAILED;
		}
	}
	progress_clear(&prog);
	if (s->lead)
		say(o, "%s at step %lld; checkpoint %s",
		    failed ? "failed" : stop_asked ? "stopped" : "done", (long long)learner_steps(s->L),
		    s->rd->ckpt);
	s->together = true;
	return failed ? TRAIN_SESSION_FAILED : TRAIN_SESSION_OK;
}

int train_session_run(const train_session_options *o, comm *c, comm *nccl)
{
	session s = { .o = o, .c = c, .nccl = nccl, .rank = comm_rank(c), .K = comm_size(c) };
	s.lead = s.rank == 0;
	int rc = session_start(&s);
	if (rc == TRAIN_SESSION_OK)
		rc = session_steps(&s);
	if (rc != TRAIN_SESSION_OK && !s.together && s.K > 1)
		comm_abort(c, rc);
	learner_free(s.L);
	nn_net_free(s.net);
	rundir_close(s.rd);
	return rc;
}

/* The parent of one process per GPU (no mpirun): checks the GPUs, makes
 * the NCCL id, launches the ranks and waits for them. */
static int launch(const train_session_options *o, int argc, char **argv)
{
	char err[8192], nid[COMM_NCCL_ID_HEX] = "";
	int have = nn_cuda_device_count();
	for (int i = 0; i < o->n_gpus; i++)
		if (o->gpus[i] >= have) {
			say(o, "--gpus names GPU %d, but %d CUDA device%s visible%s", o->gpus[i], have,
			    have == 1 ? " is" : "s are",
			    nn_cuda_built() ? "" : " (this sente was built without CUDA)");
			return TRAIN_SESSION_FAILED;
		}
	for (int i = 0; i < o->n_gpus; i++)
		for (int j = 0; j < i; j++)
			if (o->gpus[i] == o->gpus[j]) {
				say(o, "--gpus lists GPU %d twice (see 'sente train --help')", o->gpus[i]);
				return TRAIN_SESSION_USAGE;
			}
	if (comm_nccl_unique_id(nid, err, sizeof(err)) != 0) {
		say(o, "%s", err);
		return TRAIN_SESSION_FAILED;
	}
	char **full = calloc((size_t)argc + 2, sizeof(*full));
	if (!full)
		return TRAIN_SESSION_FAILED;
	full[0] = "sente";
	for (int i = 0; i < argc; i++)
		full[i + 1] = argv[i];
	launch_opts lopt = { .nccl_id = nid };
	if (!o->quiet)
		say(o, "starting %d ranks, one per GPU", o->n_gpus);
	int lr = launch_ranks("/proc/self/exe", full, o->gpus, o->n_gpus, &lopt, err, sizeof(err));
	free(full);
	if (lr != 0) {
		say(o, "%s", err);
		return TRAIN_SESSION_FAILED;
	}
	return TRAIN_SESSION_OK;
}

int train_session_main(const train_session_options *opt, int argc, char **argv)
{
	char err[8192], nid[COMM_NCCL_ID_HEX] = "";
	train_session_options o = *opt;
	bool cuda = o.learner == &learner_cuda;
	comm *c = NULL, *nccl = NULL;
	int child = 0, c_rank = 0, c_world = 1, c_dev = 0;
	int rc = TRAIN_SESSION_FAILED;
	if (cuda) {
		child = launch_child_env(&c_rank, &c_world, &c_dev, nid, err, sizeof(err));
		if (child < 0) {
			say(&o, "%s", err);
			return TRAIN_SESSION_FAILED;
		}
		if (child == 0 && !comm_launched_by_mpi() && o.n_gpus > 1)
			return launch(&o, argc, argv);
	}
	if (child == 1) {
		nccl = comm_new_nccl_from_id(c_rank, c_world, nid, c_dev, err, sizeof(err));
		c = nccl ? comm_new_nccl_host(nccl, err, sizeof(err)) : NULL;
		o.gpus[0] = c_dev;
		o.n_gpus = 1;
	} else {
		c = comm_new_world(err, sizeof(err));
	}
	if (!c) {
		say(&o, "%s", err);
		comm_free(nccl);
		return TRAIN_SESSION_FAILED;
	}
	if (cuda && child == 0 && comm_size(c) > 1) {
		int dev = 0;
		if (gpu_for_local_rank(o.gpus, o.n_gpus, &dev, err, sizeof(err)) != 0 ||
		    !(nccl = comm_new_nccl(c, dev, err, sizeof(err)))) {
			say(&o, "rank %d: %s", comm_rank(c), err);
			comm_abort(c, 1);
			goto out;
		}
		o.gpus[0] = dev;
		o.n_gpus = 1;
	}
	rc = train_session_run(&o, c, nccl);
out:
	comm_free(c);
	if (nccl != c)
		comm_free(nccl);
	return rc;
}
