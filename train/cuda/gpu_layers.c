/* gpu_layers.c: see gpu_layers.h. */
#include "train/cuda/gpu_layers.h"

#include <stdio.h>

#include "nn/cuda/cuda.h"

#ifdef SENTE_HAVE_CUDA
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cuda_common.h"
#include "nn/cuda/pack.h"
#include "train/cuda/train_kernels.h"

/* 1 with the reason when there is no device 0 to run on. */
static int gl_no_device(char *err, size_t errlen)
{
	if (nn_cuda_device_count() > 0)
		return 0;
	snprintf(err, errlen, "no CUDA device: %s", nn_cuda_probe_error());
	return 1;
}

/* On device 0, one allocation carved into n pieces of sizes[i] floats,
 * zeroed. */
static int gl_alloc(float **base, float **piece[], const size_t sizes[], int n, char *err,
		    size_t errlen)
{
	int rc = 0;
	size_t total = 0;
	CUDA_CHECK(cudaSetDevice(0));
	for (int i = 0; i < n; i++)
		total += (sizes[i] + 63) / 64 * 64;
	CUDA_CHECK(cudaMalloc((void **)base, total * sizeof(float)));
	CUDA_CHECK(cudaMemset(*base, 0, total * sizeof(float)));
	total = 0;
	for (int i = 0; i < n; i++) {
		*piece[i] = *base + total;
		total += (sizes[i] + 63) / 64 * 64;
	}
out:
	return rc;
}

/* NCHW [n][c][hw] <-> NHWC [n][hw][cp] (padding channels 0). */
static void gl_to_nhwc(const float *src, int n, int c, int hw, int cp, float *dst)
{
	memset(dst, 0, sizeof(float) * (size_t)n * hw * cp);
	for (int i = 0; i < n; i++)
		for (int ch = 0; ch < c; ch++)
			for (int p = 0; p < hw; p++)
				dst[((size_t)i * hw + p) * cp + ch] = src[((size_t)i * c + ch) * hw + p];
}

static void gl_to_nchw(const float *src, int n, int c, int hw, int cp, float *dst)
{
	for (int i = 0; i < n; i++)
		for (int ch = 0; ch < c; ch++)
			for (int p = 0; p < hw; p++)
				dst[((size_t)i * c + ch) * hw + p] = src[((size_t)i * hw + p) * cp + ch];
}

#define GL_UP(d, h, n) CUDA_CHECK(cudaMemcpy((d), (h), sizeof(float) * (size_t)(n), cudaMemcpyHostToDevice))
#define GL_DOWN(h, d, n) CUDA_CHECK(cudaMemcpy((h), (d), sizeof(float) * (size_t)(n), cudaMemcpyDeviceToHost))

int gpu_layer_bn(int n, int c, int h, int w, const float *x, const float *gamma,
		 const float *beta, const float *dy, float *y, float *mean, float *var, float *dx,
		 float *dgamma, float *dbeta, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0, hw = h * w, cp = nn_pad8(c);
	long M = (long)n * hw;
	size_t act = (size_t)M * cp;
	float *base = NULL, *hbuf = malloc(sizeof(float) * (act + (size_t)cp));
	float *z, *g, *yd, *dz, *bias, *gam, *bet, *mu, *vr, *rstd, *part, *loc, *am, *av, *am2, *gg,
		*gbt, *gbias;
	float **pieces[] = { &z, &g, &yd, &dz, &bias, &gam, &bet, &mu, &vr, &rstd, &part, &loc,
			     &am, &av, &am2, &gg, &gbt, &gbias };
	const size_t sizes[] = { act, act, act, act, cp, cp, cp, cp, cp, cp, 3 * (size_t)TK_PARTS * cp,
				 2 * (size_t)cp, cp, cp, cp, cp, cp, cp };
	if (!hbuf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (gl_alloc(&base, pieces, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])), err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	gl_to_nhwc(x, n, c, hw, cp, hbuf);
	GL_UP(z, hbuf, act);
	gl_to_nhwc(dy, n, c, hw, cp, hbuf);
	GL_UP(g, hbuf, act);
	GL_UP(gam, gamma, c);
	GL_UP(bet, beta, c);
	CUDA_CHECK(tk_bn_stats(z, NN_DTYPE_FP32, M, cp, c, bias, part, mu, vr, rstd, am, av, am2, 1, 0));
	CUDA_CHECK(tk_bn_apply(z, NN_DTYPE_FP32, M, cp, c, bias, mu, rstd, gam, bet, NULL,
			       NN_DTYPE_FP32, 0, yd, NN_DTYPE_FP32, 0));
	CUDA_CHECK(tk_bn_backward(g, NN_DTYPE_FP32, yd, NN_DTYPE_FP32, 0, z, NN_DTYPE_FP32, M, cp, c,
				  bias, mu, rstd, gam, part, loc, gg, gbt, gbias, 0, dz, NULL,
				  NN_DTYPE_FP32, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	GL_DOWN(hbuf, yd, act);
	gl_to_nchw(hbuf, n, c, hw, cp, y);
	GL_DOWN(hbuf, dz, act);
	gl_to_nchw(hbuf, n, c, hw, cp, dx);
	GL_DOWN(mean, mu, c);
	GL_DOWN(var, vr, c);
	GL_DOWN(dgamma, gg, c);
	GL_DOWN(dbeta, gbt, c);
out:
	cudaFree(base);
	free(hbuf);
	return rc;
}

int gpu_layer_relu(int n, int c, int h, int w, const float *x, const float *dy, float *y,
		   float *dx, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0;
	long cnt = (long)n * c * h * w;
	float *base = NULL, *yd, *g, *zero;
	float **pieces[] = { &yd, &g, &zero };
	const size_t sizes[] = { (size_t)cnt, (size_t)cnt, 1 };
	if (gl_alloc(&base, pieces, sizes, 3, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(yd, x, cnt);
	GL_UP(g, dy, cnt);
	/* Elementwise: one column of cnt rows, bias 0. */
	CUDA_CHECK(tk_bias_act(yd, zero, (int)cnt, 1, 1, 0));
	CUDA_CHECK(tk_relu_backward(g, yd, cnt, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	GL_DOWN(y, yd, cnt);
	GL_DOWN(dx, g, cnt);
out:
	cudaFree(base);
	return rc;
}

int gpu_layer_fc(int n, int nin, int nout, const float *x, const float *wt, const float *b,
		 const float *dy, float *y, float *dx, float *dw, float *db, char *err,
		 size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0;
	float *base = NULL, *xd, *wd, *bd, *gd, *yd, *dxd, *dwd, *dbd;
	float **pieces[] = { &xd, &wd, &bd, &gd, &yd, &dxd, &dwd, &dbd };
	const size_t sizes[] = { (size_t)n * nin, (size_t)nout * nin, (size_t)nout, (size_t)n * nout,
				 (size_t)n * nout, (size_t)n * nin, (size_t)nout * nin, (size_t)nout };
	if (gl_alloc(&base, pieces, sizes, 8, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(xd, x, sizes[0]);
	GL_UP(wd, wt, sizes[1]);
	GL_UP(bd, b, sizes[2]);
	GL_UP(gd, dy, sizes[3]);
	CUDA_CHECK(tk_fc_small(xd, n, nin, wd, bd, nout, yd, 0));
	CUDA_CHECK(tk_fc_small_backward(xd, n, nin, wd, nout, gd, dxd, dwd, dbd, 0, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	GL_DOWN(y, yd, sizes[4]);
	if (dx)
		GL_DOWN(dx, dxd, sizes[5]);
	GL_DOWN(dw, dwd, sizes[6]);
	GL_DOWN(db, dbd, sizes[7]);
out:
	cudaFree(base);
	return rc;
}

int gpu_layer_losses(int n, int np, const float *logits, const float *policy, int vo,
		     const float *vout, const float *value, const float *wdl, double *loss_policy,
		     double *loss_value, float *dlogits, float *dvout, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0;
	float *base = NULL, *ld, *pd, *vd, *zd, *wd, *dld, *dvd, *rl;
	float **pieces[] = { &ld, &pd, &vd, &zd, &wd, &dld, &dvd, &rl };
	const size_t sizes[] = { (size_t)n * np, (size_t)n * np, (size_t)n * vo, (size_t)n,
				 (size_t)n * 3, (size_t)n * np, (size_t)n * vo, (size_t)n * 2 };
	float *hrow = malloc(sizeof(float) * 2 * (size_t)n);
	if (!hrow) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (gl_alloc(&base, pieces, sizes, 8, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(ld, logits, sizes[0]);
	GL_UP(pd, policy, sizes[1]);
	GL_UP(vd, vout, sizes[2]);
	GL_UP(zd, value, sizes[3]);
	if (wdl)
		GL_UP(wd, wdl, sizes[4]);
	CUDA_CHECK(tk_loss(ld, pd, np, vd, zd, wdl ? wd : NULL, vo, n, 1.0f / (float)n, 1.0f, 1.0f,
			   dld, dvd, rl, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	GL_DOWN(dlogits, dld, sizes[5]);
	GL_DOWN(dvout, dvd, sizes[6]);
	GL_DOWN(hrow, rl, sizes[7]);
	*loss_policy = *loss_value = 0.0;
	for (int r = 0; r < n; r++) {
		*loss_policy += hrow[2 * r] / (double)n;
		*loss_value += hrow[2 * r + 1] / (double)n;
	}
out:
	cudaFree(base);
	free(hrow);
	return rc;
}

#else /* no CUDA: nothing to run on */

#define GL_REFUSE()                                                                        \
	do {                                                                               \
		snprintf(err, errlen, "built without CUDA: %s", nn_cuda_probe_error());    \
		return 1;                                                                  \
	} while (0)

int gpu_layer_bn(int n, int c, int h, int w, const float *x, const float *gamma,
		 const float *beta, const float *dy, float *y, float *mean, float *var, float *dx,
		 float *dgamma, float *dbeta, char *err, size_t errlen)
{
	GL_REFUSE();
}

int gpu_layer_relu(int n, int c, int h, int w, const float *x, const float *dy, float *y,
		   float *dx, char *err, size_t errlen)
{
	GL_REFUSE();
}

int gpu_layer_fc(int n, int nin, int nout, const float *x, const float *wt, const float *b,
		 const float *dy, float *y, float *dx, float *dw, float *db, char *err,
		 size_t errlen)
{
	GL_REFUSE();
}

int gpu_layer_losses(int n, int np, const float *logits, const float *policy, int vo,
		     const float *vout, const float *value, const float *wdl, double *loss_policy,
		     double *loss_value, float *dlogits, float *dvout, char *err, size_t errlen)
{
	GL_REFUSE();
}

#endif
