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
 * zeroed, and (nhost > 0) a host staging buffer of nhost floats into
 * *host. The caller frees *base (cudaFree) and *host in any case. */
static int gl_alloc(float **base, float **piece[], const size_t sizes[], int n, float **host,
		    size_t nhost, char *err, size_t errlen)
{
	int rc = 0;
	size_t total = 0;
	if (nhost > 0 && !(*host = malloc(sizeof(float) * nhost))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
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

/* A host tensor and its device copy: an activation, NCHW on the host and
 * NHWC rows [n][hw][cp] on the device (flat 0), or flat floats as they are. */
typedef struct gl_act {
	float *host;  /* only read going up */
	float *dev;
	size_t flat;  /* floats of a plain copy; 0: an activation */
} gl_act;

/* k tensors up (gl_to_nhwc) or down (gl_to_nchw), activations through tmp
 * of n * hw * cp floats. */
static int gl_move(int up, int k, const gl_act *t, int n, int c, int hw, int cp, float *tmp,
		   char *err, size_t errlen)
{
	int rc = 0;
	for (int i = 0; i < k; i++)
		if (t[i].flat && up) {
			GL_UP(t[i].dev, t[i].host, t[i].flat);
		} else if (t[i].flat) {
			GL_DOWN(t[i].host, t[i].dev, t[i].flat);
		} else if (up) {
			gl_to_nhwc(t[i].host, n, c, hw, cp, tmp);
			GL_UP(t[i].dev, tmp, (size_t)n * hw * cp);
		} else {
			GL_DOWN(tmp, t[i].dev, (size_t)n * hw * cp);
			gl_to_nchw(tmp, n, c, hw, cp, t[i].host);
		}
out:
	return rc;
}

int gpu_layer_bn(int n, int c, int h, int w, const float *x, const float *gamma,
		 const float *beta, const float *dy, float *y, float *mean, float *var, float *dx,
		 float *dgamma, float *dbeta, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0, hw = h * w, cp = nn_pad8(c);
	long M = (long)n * hw;
	size_t act = (size_t)M * cp;
	float *base = NULL, *hbuf = NULL;
	float *z, *g, *yd, *dz, *bias, *gam, *bet, *mu, *vr, *rstd, *part, *loc, *am, *av, *am2, *gg,
		*gbt, *gbias;
	float **pieces[] = { &z, &g, &yd, &dz, &bias, &gam, &bet, &mu, &vr, &rstd, &part, &loc,
			     &am, &av, &am2, &gg, &gbt, &gbias };
	const size_t sizes[] = { act, act, act, act, cp, cp, cp, cp, cp, cp, 3 * (size_t)TK_PARTS * cp,
				 2 * (size_t)cp, cp, cp, cp, cp, cp, cp };
	if (gl_alloc(&base, pieces, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])), &hbuf, act, err,
		     errlen) < 0) {
		rc = -1;
		goto out;
	}
	/* The inputs are only read (gl_act's host is not const). */
	const gl_act up[] = { { (float *)x, z, 0 }, { (float *)dy, g, 0 } };
	if (gl_move(1, 2, up, n, c, hw, cp, hbuf, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(gam, gamma, c);
	GL_UP(bet, beta, c);
	CUDA_CHECK(tk_bn_stats(z, NN_DTYPE_FP32, M, cp, c, bias, part, mu, vr, rstd, am, av, am2, 1, 0));
	CUDA_CHECK(tk_bn_apply(z, NN_DTYPE_FP32, M, cp, c, bias, mu, rstd, gam, bet, NULL,
			       NN_DTYPE_FP32, 0, yd, NN_DTYPE_FP32, 0));
	CUDA_CHECK(tk_bn_backward(g, NN_DTYPE_FP32, yd, NN_DTYPE_FP32, 0, z, NN_DTYPE_FP32, M, cp, c,
				  bias, mu, rstd, gam, part, loc, gg, gbt, gbias, 0, dz, NULL,
				  NN_DTYPE_FP32, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	const gl_act down[] = { { y, yd, 0 }, { dx, dz, 0 } };
	if (gl_move(0, 2, down, n, c, hw, cp, hbuf, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
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
	if (gl_alloc(&base, pieces, sizes, 3, NULL, 0, err, errlen) < 0) {
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
	if (gl_alloc(&base, pieces, sizes, 8, NULL, 0, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(xd, x, sizes[0]);
	GL_UP(wd, wt, sizes[1]);
	GL_UP(bd, b, sizes[2]);
	GL_UP(gd, dy, sizes[3]);
	CUDA_CHECK(tk_fc_small(xd, n, nin, wd, bd, nout, TK_ACT_NONE, yd, 0));
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

int gpu_layer_se(int n, int c, int s, int h, int w, const float *u, const float *skip,
		 const float *pw, const float *w1, const float *b1, const float *w2,
		 const float *b2, const float *dy, float *y, float *du, float *dskip,
		 float *dw1, float *db1, float *dw2, float *db2, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0, hw = h * w, cp = nn_pad8(c);
	size_t act = (size_t)n * hw * cp, nc = (size_t)n * c, ns = (size_t)n * s;
	size_t n1 = (size_t)s * c, n2 = (size_t)2 * c * s;
	float *base = NULL, *hbuf = NULL;
	float *ud, *skd, *gd, *yd, *gsd, *dud, *w1d, *b1d, *w2d, *b2d, *gw1, *gb1, *gw2, *gb2, *pool,
		*hid, *gate, *dz, *dhid, *dpool, *pwd;
	float **pieces[] = { &ud, &skd, &gd, &yd, &gsd, &dud, &w1d, &b1d, &w2d, &b2d, &gw1,
			     &gb1, &gw2, &gb2, &pool, &hid, &gate, &dz, &dhid, &dpool, &pwd };
	const size_t sizes[] = { act, act, act, act, act, act, n1, (size_t)s, n2, 2 * (size_t)c,
				 n1, (size_t)s, n2, 2 * (size_t)c, nc, ns, 2 * nc, 2 * nc, ns, nc,
				 (size_t)n * hw };
	if (gl_alloc(&base, pieces, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])), &hbuf, act, err,
		     errlen) < 0) {
		rc = -1;
		goto out;
	}
	/* The inputs are only read (gl_act's host is not const). */
	const gl_act up[] = { { (float *)u, ud, 0 }, { (float *)dy, gd, 0 },
			      { (float *)w1, w1d, n1 }, { (float *)b1, b1d, (size_t)s },
			      { (float *)w2, w2d, n2 }, { (float *)b2, b2d, 2 * (size_t)c },
			      { (float *)skip, skd, 0 } };
	if (gl_move(1, skip ? 7 : 6, up, n, c, hw, cp, hbuf, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	/* The pool weights are [n][hw] on both sides: no reordering. */
	if (pw)
		GL_UP(pwd, pw, (size_t)n * hw);
	/* The gradients start at 0 (gl_alloc) and tk_se_backward adds. */
	tk_se e = { .m = n, .hw = hw, .cp = cp, .creal = c, .s = s,
		    .w1 = w1d, .b1 = b1d, .w2 = w2d, .b2 = b2d,
		    .gw1 = gw1, .gb1 = gb1, .gw2 = gw2, .gb2 = gb2,
		    .pool = pool, .hid = hid, .gate = gate, .dz = dz, .dhid = dhid, .dpool = dpool,
		    .pw = pw ? pwd : NULL };
	const nn_dtype f = NN_DTYPE_FP32;
	CUDA_CHECK(tk_se_forward(&e, ud, f, skip ? skd : NULL, f, yd, f, 0));
	CUDA_CHECK(tk_se_backward(&e, gd, f, yd, f, ud, f, gsd, f, dud, f, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	const gl_act down[] = { { y, yd, 0 }, { du, dud, 0 }, { dskip, gsd, 0 },
				{ dw1, gw1, n1 }, { db1, gb1, (size_t)s },
				{ dw2, gw2, n2 }, { db2, gb2, 2 * (size_t)c } };
	if (gl_move(0, 7, down, n, c, hw, cp, hbuf, err, errlen) < 0)
		rc = -1;
out:
	cudaFree(base);
	free(hbuf);
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
	float *hrow = NULL;
	if (gl_alloc(&base, pieces, sizes, 8, &hrow, 2 * (size_t)n, err, errlen) < 0) {
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

int gpu_layer_opp_loss(int n, int np, const float *logits, const float *target, float w,
		       double *loss, float *dlogits, char *err, size_t errlen)
{
	if (gl_no_device(err, errlen))
		return 1;
	int rc = 0;
	float *base = NULL, *ld, *td, *dld, *rl;
	float **pieces[] = { &ld, &td, &dld, &rl };
	const size_t sizes[] = { (size_t)n * np, (size_t)n * np, (size_t)n * np, (size_t)n };
	float *hrow = NULL;
	if (gl_alloc(&base, pieces, sizes, 4, &hrow, (size_t)n, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	GL_UP(ld, logits, sizes[0]);
	GL_UP(td, target, sizes[1]);
	CUDA_CHECK(tk_policy_loss(ld, td, np, n, 1.0f / (float)n, w, 1.0f, dld, rl, 0));
	CUDA_CHECK(cudaDeviceSynchronize());
	GL_DOWN(dlogits, dld, sizes[2]);
	GL_DOWN(hrow, rl, sizes[3]);
	*loss = 0.0;
	for (int r = 0; r < n; r++)
		*loss += hrow[r] / (double)n;
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

int gpu_layer_se(int n, int c, int s, int h, int w, const float *u, const float *skip,
		 const float *pw, const float *w1, const float *b1, const float *w2,
		 const float *b2, const float *dy, float *y, float *du, float *dskip,
		 float *dw1, float *db1, float *dw2, float *db2, char *err, size_t errlen)
{
	GL_REFUSE();
}

int gpu_layer_losses(int n, int np, const float *logits, const float *policy, int vo,
		     const float *vout, const float *value, const float *wdl, double *loss_policy,
		     double *loss_value, float *dlogits, float *dvout, char *err, size_t errlen)
{
	GL_REFUSE();
}

int gpu_layer_opp_loss(int n, int np, const float *logits, const float *target, float w,
		       double *loss, float *dlogits, char *err, size_t errlen)
{
	GL_REFUSE();
}

#endif
