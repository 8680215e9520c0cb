/* bench.c: `sente bench nn` (see bench.h). */
#include "nn/bench.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "engine/rng.h"
#include "nn/cpu/peak.h"
#include "nn/cuda/cuda.h"

nn_bench_options nn_bench_options_default(void)
{
	nn_bench_options o;
	memset(&o, 0, sizeof(o));
	o.blocks = 6;
	o.channels = 64;
	o.game = game_desc_by_name("go")->defaults;
	o.batches[0] = 1;
	o.batches[1] = 8;
	o.batches[2] = 32;
	o.n_batches = 3;
	o.seconds = 2.0;
	o.backend = nn_backend_options_default();
	o.seed = 1;
	o.accuracy_positions = 256;
	o.backend.kind = NN_BACKEND_CPU;
	return o;
}

/* An environment variable as a JSON string's contents: "default" when unset,
 * "?" when it is long or would need escaping. */
static const char *json_safe_env(const char *name)
{
	const char *v = getenv(name);
	if (!v)
		return "default";
	if (strlen(v) > 16 || strchr(v, '"') || strchr(v, '\\'))
		return "?";
	return v;
}

/* planes [n] of random legal play (0 to 2/3 of the points in moves);
 * false when the net's encoding does not fit its game. */
static bool bench_positions(const nn_arch *a, int n, uint64_t seed, float *planes)
{
	game *g = malloc(sizeof(*g));
	int *moves = malloc(sizeof(int) * GAME_MAX_ACTIONS);
	game_params gp = nn_arch_params(a);
	bool ok = g && moves;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	int max_moves = a->board_w * a->board_h * 2 / 3;
	uint64_t s = seed | 1;
	for (int i = 0; ok && i < n; i++) {
		ok = game_init(g, &gp) == GAME_OK;
		int len = (int)(rng_next(&s) % (uint64_t)(max_moves + 1));
		for (int m = 0; ok && m < len; m++) {
			int k = game_legal_moves(g, moves);
			if (k == 0)
				break;
			int mv = moves[rng_next(&s) % (uint64_t)k];
			if (mv == game_pass_move(g) && k > 1)
				mv = moves[0] == mv ? moves[1] : moves[0];
			ok = game_play(g, mv) == GAME_OK;
		}
		ok = ok && nn_encode(g, a->encoding, planes + (size_t)i * in_n) > 0;
	}
	free(g);
	free(moves);
	return ok;
}

/* Accuracy of `be` against an fp32 context of the same net over n
 * positions of random play, into acc. */
static int bench_accuracy(const nn_bench_options *o, const nn_backend_options *bo,
			  const nn_net *net, nn_backend *be, nn_bench_accuracy *acc, char *err,
			  size_t errlen)
{
	int rc = -1;
	const nn_arch *a = &net->arch;
	int n = o->accuracy_positions, mb = be->max_batch;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h, np = (size_t)a->policy_outputs;
	nn_backend_options fo = *bo;
	fo.precision = NN_DTYPE_FP32;
	fo.verbose = 0;
	nn_backend *ref = nn_backend_new(be->ops, net, mb, &fo, err, errlen);
	float *planes = malloc(sizeof(float) * in_n * (size_t)n);
	float *pq = malloc(sizeof(float) * np * (size_t)n), *pf = malloc(sizeof(float) * np * (size_t)n);
	float *vq = malloc(sizeof(float) * (size_t)n), *vf = malloc(sizeof(float) * (size_t)n);
	memset(acc, 0, sizeof(*acc));
	if (!ref)
		goto out;
	if (!planes || !pq || !pf || !vq || !vf) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* A seed apart from the int8 calibration's. */
	if (!bench_positions(a, n, 0xacc0ull + o->seed, planes)) {
		snprintf(err, errlen, "cannot make positions for the net's game and encoding");
		goto out;
	}
	for (int off = 0; off < n; off += mb) {
		int b = n - off < mb ? n - off : mb;
		if (nn_backend_forward(be, b, planes + off * in_n, pq + off * np, vq + off, NULL) < 0 ||
		    nn_backend_forward(ref, b, planes + off * in_n, pf + off * np, vf + off, NULL) < 0) {
			snprintf(err, errlen, "the backend failed during the accuracy run");
			goto out;
		}
	}
	int agree = 0;
	double kl = 0;
	for (int i = 0; i < n; i++) {
		const float *q = pq + i * np, *f = pf + i * np;
		size_t bq = 0, bf = 0;
		double mq = q[0], mf = f[0], zq = 0, zf = 0;
		for (size_t k = 0; k < np; k++) {
			double d = fabs((double)q[k] - f[k]);
			if (d > acc->policy_max_abs_diff)
				acc->policy_max_abs_diff = d;
			if (q[k] > q[bq])
				bq = k;
			if (f[k] > f[bf])
				bf = k;
			mq = fmax(mq, q[k]);
			mf = fmax(mf, f[k]);
		}
		agree += bq == bf;
		for (size_t k = 0; k < np; k++) {
			zq += exp(q[k] - mq);
			zf += exp(f[k] - mf);
		}
		/* KL(fp32 || this) over all actions: sum p_f (log p_f - log p_q). */
		for (size_t k = 0; k < np; k++) {
			double lf = f[k] - mf - log(zf), lq = q[k] - mq - log(zq);
			kl += exp(lf) * (lf - lq);
		}
		double dv = fabs((double)vq[i] - vf[i]);
		acc->value_mean_abs_diff += dv / n;
		if (dv > acc->value_max_abs_diff)
			acc->value_max_abs_diff = dv;
	}
	acc->policy_kl = kl / n;
	acc->top1_agreement = (double)agree / n;
	acc->positions = n;
	rc = 0;
out:
	nn_backend_free(ref);
	free(planes);
	free(pq);
	free(pf);
	free(vq);
	free(vf);
	return rc;
}

/* One backend's share of nn_bench_backends, on a thread of its own. */
typedef struct bench_lane {
	nn_backend *be;
	const float *planes;
	int batch;
	double seconds;
	long runs;   /* out: timed calls */
	double took; /* out: their seconds */
	int failed;  /* out */
} bench_lane;

static void *bench_lane_main(void *arg)
{
	bench_lane *l = arg;
	float *pol = malloc(sizeof(float) * (size_t)l->be->arch.policy_outputs * (size_t)l->batch);
	float *val = malloc(sizeof(float) * (size_t)l->batch);
	l->failed = !pol || !val;
	/* Warm up: first runs touch fresh memory and JIT caches. */
	for (int w = 0; w < 2 && !l->failed; w++)
		l->failed = nn_backend_forward(l->be, l->batch, l->planes, pol, val, NULL) < 0;
	double t0 = clock_now();
	while (!l->failed) {
		l->failed = nn_backend_forward(l->be, l->batch, l->planes, pol, val, NULL) < 0;
		l->runs++;
		l->took = clock_now() - t0;
		if (l->took >= l->seconds)
			break;
	}
	free(pol);
	free(val);
	return NULL;
}

double nn_bench_backends(nn_backend *const *be, int n, int batch, const float *planes,
			 double seconds, double *ms)
{
	bench_lane lanes[NN_MAX_GPUS];
	pthread_t th[NN_MAX_GPUS];
	if (n < 1 || n > NN_MAX_GPUS)
		return -1;
	for (int i = 0; i < n; i++)
		lanes[i] = (bench_lane){ .be = be[i], .planes = planes, .batch = batch,
					 .seconds = seconds };
	int started = 0;
	if (n == 1) {
		bench_lane_main(&lanes[0]);
		started = 1;
	} else {
		for (; started < n; started++)
			if (pthread_create(&th[started], NULL, bench_lane_main, &lanes[started]) != 0)
				break;
		for (int i = 0; i < started; i++)
			pthread_join(th[i], NULL);
	}
	if (started < n)
		return -1;
	double evals = 0, msum = 0;
	for (int i = 0; i < n; i++) {
		if (lanes[i].failed || lanes[i].runs == 0)
			return -1;
		evals += (double)lanes[i].runs * batch / lanes[i].took;
		msum += 1e3 * lanes[i].took / (double)lanes[i].runs;
	}
	if (ms)
		*ms = msum / n;
	return evals;
}

int nn_bench_run(const nn_bench_options *o, char *err, size_t errlen)
{
	int rc = -1;
	nn_net *net = NULL;
	nn_backend *lane[NN_MAX_GPUS] = { NULL }, *be = NULL; /* be: the first lane */
	float *planes = NULL;
	int n_lanes = 1;
	int max_batch = 1;
	for (int i = 0; i < o->n_batches; i++)
		if (o->batches[i] > max_batch)
			max_batch = o->batches[i];
	if (o->weights) {
		net = nn_net_load_any(o->weights, NULL, err, errlen);
		if (!net)
			goto out;
	} else {
		nn_arch a = nn_arch_default(&o->game, o->blocks, o->channels);
		net = nn_net_new(&a, err, errlen);
		if (!net)
			goto out;
		nn_net_init_random(net, o->seed);
	}
	const nn_arch *a = &net->arch;
	/* CUDA: the device asked for, else none; the CPU otherwise. */
	const nn_backend_ops *ops = &nn_backend_cpu;
	nn_backend_options bo = o->backend;
	int cuda = 0;
	if (o->backend.kind != NN_BACKEND_CPU) {
		bo.device = o->backend.n_gpus > 0 ? o->backend.gpus[0] : 0;
		if (bo.device < nn_cuda_device_count() && nn_cuda_backend_built()) {
			cuda = 1;
			ops = o->backend.kind == NN_BACKEND_CHECK ? &nn_backend_check : &nn_backend_cuda;
			if (!o->backend.precision_given)
				bo.precision = NN_DTYPE_FP16;
		} else if (o->backend.kind == NN_BACKEND_CUDA || o->backend.kind == NN_BACKEND_CHECK) {
			fprintf(stderr, "sente bench nn: skipped: %s%s\n",
				!nn_cuda_backend_built() ? "this binary has no CUDA backend (no nvcc or cuDNN at build)"
				: nn_cuda_device_count() == 0 ? "no CUDA device found: "
							       : "no such CUDA device",
				nn_cuda_backend_built() && nn_cuda_device_count() == 0
					? nn_cuda_probe_error() : "");
			rc = 0;
			goto out;
		}
	}
	/* CPU lanes: copies of the network that split the threads, measured
	 * at once (nn_backend_set_open's split; the first lane is `be`). */
	int threads, cpu_lanes = nn_cpu_lanes(&bo, &threads);
	if (!cuda)
		n_lanes = cpu_lanes;
	double t_create = clock_now();
	for (int i = 0; i < n_lanes; i++) {
		nn_backend_options lo = bo;
		if (n_lanes > 1)
			lo.threads = nn_cpu_lane_threads(threads, n_lanes, i);
		lane[i] = nn_backend_new(ops, net, max_batch, &lo, err, errlen);
		if (!lane[i])
			goto out;
	}
	be = lane[0];
	t_create = clock_now() - t_create;
	char dev_json[256] = "";
	double peak = 0;
	if (cuda) {
		char name[128];
		nn_cuda_device_name(bo.device, name, sizeof(name));
		for (char *q = name; *q; q++)
			if (*q == '"' || *q == '\\')
				*q = '?';
		peak = nn_cuda_peak_tflops(bo.device, bo.precision == NN_DTYPE_FP32);
		snprintf(dev_json, sizeof(dev_json), ",\"device\":\"%s\",\"gpu\":%d,\"peak_tflops\":%.1f",
			 name, bo.device, peak);
		if (bo.verbose) {
			char d[512];
			be->ops->describe(be->ctx, d, sizeof(d));
			fprintf(stderr, "%s\n", d);
		}
	}
	else {
		/* The CPU's peak for the precision, measured once on the
		 * threads the backend runs (all cores by default). */
		nn_cpu_peak cp = nn_cpu_peak_measure(bo.precision, threads, 0.5);
		peak = cp.gops;
		snprintf(dev_json, sizeof(dev_json), ",\"cpu_isa\":\"%s\",\"peak_gops\":%.1f", cp.isa,
			 cp.gops);
	}
	char acc_json[512] = "";
	if (bo.precision != NN_DTYPE_FP32 && o->accuracy_positions > 0) {
		nn_bench_accuracy acc;
		if (bench_accuracy(o, &bo, net, be, &acc, err, errlen) < 0)
			goto out;
		snprintf(acc_json, sizeof(acc_json),
			 ",\"accuracy_positions\":%d,\"policy_max_abs_diff\":%.4g,\"policy_kl\":%.4g,"
			 "\"top1_agreement\":%.4f,\"value_max_abs_diff\":%.4g,"
			 "\"value_mean_abs_diff\":%.4g",
			 acc.positions, acc.policy_max_abs_diff, acc.policy_kl, acc.top1_agreement,
			 acc.value_max_abs_diff, acc.value_mean_abs_diff);
	}
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	planes = malloc(sizeof(float) * in_n * (size_t)max_batch);
	if (!planes) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* Positions of random play, as a search sends them: what the CUDA
	 * backend packs for upload depends on them (random 0/1 planes cost
	 * its packer several times more per position than real ones). */
	if (!bench_positions(a, max_batch, o->seed, planes)) {
		uint64_t s = o->seed ? o->seed : 1;
		for (size_t i = 0; i < in_n * (size_t)max_batch; i++)
			planes[i] = (float)(rng_next(&s) & 1);
	}
	double flops = nn_net_flops(net);
	/* libgomp reads both once at load, and how its workers wait between
	 * layers moves the figures by 2x either way (README, on
	 * OMP_WAIT_POLICY; sente sets PASSIVE when it is unset, cli/main.c). */
	const char *wait_policy = json_safe_env("OMP_WAIT_POLICY");
	const char *spincount = json_safe_env("GOMP_SPINCOUNT");
	for (int bi = 0; bi < o->n_batches; bi++) {
		int b = o->batches[bi];
		double ms, evals = nn_bench_backends(lane, n_lanes, b, planes, o->seconds, &ms);
		if (evals < 0)
			goto fwd_fail;
		char tc_json[96] = "";
		if (cuda)
			snprintf(tc_json, sizeof(tc_json), ",\"tflops\":%.2f,\"tc_peak_fraction\":%.4f",
				 evals * flops * 1e-12, peak > 0 ? evals * flops * 1e-12 / peak : 0.0);
		else if (peak > 0)
			snprintf(tc_json, sizeof(tc_json), ",\"peak_fraction\":%.4f",
				 evals * flops * 1e-9 / peak);
		printf("{\"bench\":\"nn\",\"backend\":\"%s\",\"precision\":\"%s\",\"game\":\"%s\","
		       "\"blocks\":%d,\"channels\":%d,\"size\":%d,\"batch\":%d,\"threads\":%d,\"lanes\":%d,"
		       "\"evals_per_s\":%.1f,\"ms_per_batch\":%.3f,\"gflops\":%.2f,"
		       "\"create_s\":%.3f,\"omp_wait_policy\":\"%s\",\"omp_spincount\":\"%s\"%s%s%s}\n",
		       be->ops->name, nn_dtype_name(bo.precision),
		       game_kind_name(a->game), a->blocks, a->channels, a->board_w, b,
		       o->backend.threads, n_lanes, evals, ms, evals * flops * 1e-9, t_create,
		       wait_policy, spincount, dev_json, tc_json, acc_json);
		fflush(stdout);
	}
	rc = 0;
	goto out;
fwd_fail:
	snprintf(err, errlen, "the backend failed during the benchmark");
out:
	for (int i = 0; i < NN_MAX_GPUS; i++)
		nn_backend_free(lane[i]);
	nn_net_free(net);
	free(planes);
	return rc;
}
