/* backend.c: the backend-independent glue of backend.h. */
#include "nn/backend.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/cpu/peak.h"
#include "nn/cuda/cuda.h"

nn_backend_options nn_backend_options_default(void)
{
	nn_backend_options o;
	memset(&o, 0, sizeof(o));
	o.precision = NN_DTYPE_FP32;
	o.algo = NN_CONV_AUTO;
	o.kind = NN_BACKEND_AUTO;
	return o;
}

static const char *const kind_names[] = { "auto", "cpu", "cuda", "check" };
enum { N_KINDS = sizeof(kind_names) / sizeof(kind_names[0]) };

const char *nn_backend_kind_name(nn_backend_kind k)
{
	return (unsigned)k < N_KINDS ? kind_names[k] : "?";
}

bool nn_backend_kind_from_name(const char *name, nn_backend_kind *out)
{
	for (int i = 0; i < N_KINDS; i++)
		if (strcmp(name, kind_names[i]) == 0) {
			*out = (nn_backend_kind)i;
			return true;
		}
	return false;
}

bool nn_backend_parse_gpus(const char *s, nn_backend_options *opt, char *err, size_t errlen)
{
	int n = 0, gpus[NN_MAX_GPUS];
	const char *p = s;
	for (;;) {
		if (*p < '0' || *p > '9') {
			snprintf(err, errlen, "--gpus takes device numbers like 0,1,3; got '%s'", s);
			return false;
		}
		int d = 0;
		while (*p >= '0' && *p <= '9' && d < 1000)
			d = d * 10 + (*p++ - '0');
		if (d > 63) {
			snprintf(err, errlen, "--gpus: device %d is out of range 0..63", d);
			return false;
		}
		for (int i = 0; i < n; i++)
			if (gpus[i] == d) {
				snprintf(err, errlen, "--gpus: device %d is listed twice", d);
				return false;
			}
		if (n == NN_MAX_GPUS) {
			snprintf(err, errlen, "--gpus: at most %d devices", NN_MAX_GPUS);
			return false;
		}
		gpus[n++] = d;
		if (*p == '\0')
			break;
		if (*p++ != ',') {
			snprintf(err, errlen, "--gpus takes device numbers like 0,1,3; got '%s'", s);
			return false;
		}
	}
	memcpy(opt->gpus, gpus, sizeof(int) * (size_t)n);
	opt->n_gpus = n;
	return true;
}

nn_backend *nn_backend_new(const nn_backend_ops *ops, const nn_net *net, int max_batch,
			   const nn_backend_options *opt, char *err, size_t errlen)
{
	nn_backend *be = calloc(1, sizeof(*be));
	if (!be) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nn_backend_options def = nn_backend_options_default();
	if (ops->create(net, max_batch, opt ? opt : &def, &be->ctx, err, errlen) < 0) {
		free(be);
		return NULL;
	}
	be->ops = ops;
	be->max_batch = max_batch;
	be->arch = net->arch;
	return be;
}

void nn_backend_free(nn_backend *be)
{
	if (!be)
		return;
	be->ops->destroy(be->ctx);
	free(be);
}

int nn_backend_forward(nn_backend *be, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl_or_null)
{
	assert(batch >= 1 && batch <= be->max_batch);
	return be->ops->forward(be->ctx, batch, planes, policy_logits, value, wdl_or_null);
}

int nn_backend_heads(const nn_backend *be)
{
	return be->ops->forward_heads ? nn_arch_heads(&be->arch) & (NN_HEAD_OWN | NN_HEAD_SCORE) : 0;
}

int nn_backend_forward_heads(nn_backend *be, int batch, const float *planes, float *policy_logits,
			     float *value, float *wdl_or_null, float *ownership, float *score)
{
	assert(batch >= 1 && batch <= be->max_batch);
	if (!be->ops->forward_heads)
		return -1;
	return be->ops->forward_heads(be->ctx, batch, planes, policy_logits, value, wdl_or_null,
				      ownership, score);
}

int nn_backend_parse_flag(const char *flag, const char *value, nn_backend_options *opt, char *err,
			  size_t errlen)
{
	if (!strcmp(flag, "--backend")) {
		if (nn_backend_kind_from_name(value, &opt->kind))
			return 1;
		snprintf(err, errlen,
			 "--backend takes auto, cpu or cuda (or check: cuda checked against the cpu), "
			 "got '%s'", value);
		return -1;
	}
	if (!strcmp(flag, "--gpus"))
		return nn_backend_parse_gpus(value, opt, err, errlen) ? 1 : -1;
	if (!strcmp(flag, "--precision")) {
		if (nn_dtype_from_name(value, &opt->precision)) {
			opt->precision_given = 1;
			return 1;
		}
		snprintf(err, errlen, "--precision takes fp32, bf16, int8 or fp16, got '%s'", value);
		return -1;
	}
	return 0;
}

/* Tries one CUDA backend per listed GPU; 0, or -1 with the reason in why. */
static int set_open_cuda(nn_backend_set *s, const nn_net *net, int max_batch,
			 const nn_backend_options *opt, char *why, size_t whylen)
{
	if (!nn_cuda_built()) {
		snprintf(why, whylen, "this binary was built without CUDA");
		return -1;
	}
	int devices = nn_cuda_device_count();
	if (devices == 0) {
		snprintf(why, whylen, "no device: %s", nn_cuda_probe_error());
		return -1;
	}
	nn_backend_options o = *opt;
	o.precision = opt->precision_given ? opt->precision : NN_DTYPE_FP16;
	int n = opt->n_gpus > 0 ? opt->n_gpus : 1;
	size_t at = (size_t)snprintf(s->what, sizeof(s->what), "cuda %s on GPU",
				     nn_dtype_name(o.precision));
	for (int i = 0; i < n; i++) {
		o.device = opt->n_gpus > 0 ? opt->gpus[i] : 0;
		if (o.device >= devices) {
			snprintf(why, whylen, "no CUDA device %d (%d present)", o.device, devices);
			goto fail;
		}
		char e[512];
		s->be[s->n] = nn_backend_new(&nn_backend_cuda, net, max_batch, &o, e, sizeof(e));
		if (!s->be[s->n]) {
			snprintf(why, whylen, "GPU %d: %s", o.device, e);
			goto fail;
		}
		s->n++;
		char name[128];
		nn_cuda_device_name(o.device, name, sizeof(name));
		if (at < sizeof(s->what))
			at += (size_t)snprintf(s->what + at, sizeof(s->what) - at, "%s %d (%s)",
					       i ? "," : "", o.device, name);
	}
	s->precision = o.precision;
	return 0;
fail:
	nn_backend_set_close(s);
	return -1;
}

/* --backend check: one checking backend on the first listed GPU, no
 * fallback (a check that fell back to the CPU would check nothing). */
static int set_open_check(nn_backend_set *s, const nn_net *net, int max_batch,
			  const nn_backend_options *opt, char *err, size_t errlen)
{
	if (!opt->check_test && nn_cuda_device_count() == 0) {
		snprintf(err, errlen, "--backend check needs a CUDA device: %s", nn_cuda_probe_error());
		return -1;
	}
	nn_backend_options o = *opt;
	o.precision = opt->precision_given ? opt->precision : NN_DTYPE_FP16;
	o.device = opt->n_gpus > 0 ? opt->gpus[0] : 0;
	s->be[0] = nn_backend_new(&nn_backend_check, net, max_batch, &o, err, errlen);
	if (!s->be[0])
		return -1;
	s->n = 1;
	s->precision = o.precision;
	snprintf(s->what, sizeof(s->what), "check: %s %s on GPU %d against cpu fp32",
		 o.check_test ? o.check_test->name : "cuda", nn_dtype_name(o.precision), o.device);
	return 0;
}

int nn_backend_set_open(nn_backend_set *s, const nn_net *net, int max_batch,
			const nn_backend_options *opt, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	if (opt->kind == NN_BACKEND_CHECK)
		return set_open_check(s, net, max_batch, opt, err, errlen);
	char why[600] = "";
	if (opt->kind != NN_BACKEND_CPU && set_open_cuda(s, net, max_batch, opt, why, sizeof(why)) == 0)
		return 0;
	nn_backend_options o = *opt;
	o.precision = opt->precision_given ? opt->precision
		      : opt->cpu_int8_default && nn_cpu_fast_int8() ? NN_DTYPE_INT8
								   : NN_DTYPE_FP32;
	const char *note = "";
	if (o.precision == NN_DTYPE_FP16) {
		o.precision = NN_DTYPE_FP32;
		note = ", fp16 is GPU-only";
	}
	int threads, lanes = nn_cpu_lanes(opt, &threads);
	for (int i = 0; i < lanes; i++) {
		/* One lane keeps threads 0 (the runtime's default). */
		if (lanes > 1)
			o.threads = nn_cpu_lane_threads(threads, lanes, i);
		s->be[i] = nn_backend_new(&nn_backend_cpu, net, max_batch, &o, err, errlen);
		if (!s->be[i]) {
			nn_backend_set_close(s);
			return -1;
		}
		s->n++;
	}
	s->lanes = lanes;
	s->precision = o.precision;
	char lane_note[64] = "";
	if (lanes > 1 && threads % lanes == 0)
		snprintf(lane_note, sizeof(lane_note), ", %d lanes of %d thread%s", lanes,
			 threads / lanes, threads == lanes ? "" : "s");
	else if (lanes > 1)
		snprintf(lane_note, sizeof(lane_note), ", %d lanes over %d threads", lanes, threads);
	if (why[0]) /* the note first: a long reason may be cut */
		snprintf(s->what, sizeof(s->what), "cpu %s%s (CUDA %s%s: %s)",
			 nn_dtype_name(o.precision), lane_note,
			 opt->kind == NN_BACKEND_CUDA ? "requested but not usable, falling back" : "not used",
			 note, why);
	else
		snprintf(s->what, sizeof(s->what), "cpu %s%s%s", nn_dtype_name(o.precision),
			 note[0] ? " (fp16 is GPU-only)" : "", lane_note);
	return 0;
}

int nn_cpu_lanes(const nn_backend_options *opt, int *threads)
{
	*threads = opt->threads > 0 ? opt->threads : nn_cpu_threads_default();
	int lanes = opt->lanes < 1 ? 1 : opt->lanes;
	if (lanes > *threads)
		lanes = *threads;
	return lanes > NN_MAX_GPUS ? NN_MAX_GPUS : lanes;
}

int nn_cpu_lane_threads(int threads, int lanes, int i)
{
	return threads / lanes + (i < threads % lanes);
}

int nn_lane_batch(const nn_backend_set *s, int batch, int share)
{
	return s->lanes > 1 && share > 0 && share < batch ? share : batch;
}

int nn_lanes_resolve(const nn_backend_options *opt, int feeders)
{
	if (opt->lanes > 0)
		return opt->lanes;
	int threads = opt->threads > 0 ? opt->threads : nn_cpu_threads_default();
	int lanes = threads < feeders ? threads : feeders;
	return lanes < 1 ? 1 : lanes;
}

int nn_cpu_threads_default(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

void nn_backend_set_close(nn_backend_set *s)
{
	for (int i = 0; i < s->n; i++)
		nn_backend_free(s->be[i]);
	s->n = 0;
	s->lanes = 0;
}
