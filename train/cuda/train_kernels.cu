/* train_kernels.cu: the GPU trainer's kernels (train_kernels.h). Element
 * types are runtime arguments (a uniform branch per load) rather than
 * template instances per combination: every kernel here is bound by memory,
 * not by the branch. */
#include "train/cuda/train_kernels.h"

#include <math.h>

#include "nn/cuda/cuda_common.h"

#define TK_EPS 1e-5f /* NN_BN_EPS */

/* ---- layout and weights ----------------------------------------------- */

__global__ void k_gather(const float *master, const int32_t *map, long n, int dt, void *out)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x) {
		int32_t j = map[i];
		cuda_st(out, i, dt, j >= 0 ? master[j] : 0.0f);
	}
}

extern "C" cudaError_t tk_gather(const float *master, const int32_t *map, long n, nn_dtype dt,
				 void *out, cudaStream_t s)
{
	if (n > 0)
		k_gather<<<cuda_grid(n, 256), 256, 0, s>>>(master, map, n, dt, out);
	return cudaGetLastError();
}

__global__ void k_scatter(const void *src, int dt, const int32_t *map, long n, float *grad, int acc)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x) {
		int32_t j = map[i];
		if (j >= 0)
			grad[j] = (acc ? grad[j] : 0.0f) + cuda_ld(src, i, dt);
	}
}

extern "C" cudaError_t tk_scatter(const void *src, nn_dtype dt, const int32_t *map, long n,
				  float *grad, int acc, cudaStream_t s)
{
	if (n > 0)
		k_scatter<<<cuda_grid(n, 256), 256, 0, s>>>(src, dt, map, n, grad, acc);
	return cudaGetLastError();
}

/* ---- batch norm ---------------------------------------------------------- */

/* Block (32, 8): 32 channels by 8 row lanes; grid (cp / 32 rounded up,
 * TK_PARTS). Partial column sums of f(row, c) into part[blockIdx.y][c]. */
#define BN_TX 32
#define BN_TY 8

/* mode 0: z + b; mode 1: (z + b - mean)^2. */
__global__ void k_bn_part(const void *z, int dz, long M, int cp, int creal, const float *bias,
			  const float *mean, int mode, float *part)
{
	__shared__ float sh[BN_TY][BN_TX];
	int c = blockIdx.x * BN_TX + threadIdx.x;
	float s = 0.0f;
	if (c < creal) {
		float b = bias[c], mu = mode ? mean[c] : 0.0f;
		for (long r = blockIdx.y * BN_TY + threadIdx.y; r < M; r += (long)TK_PARTS * BN_TY) {
			float v = cuda_ld(z, r * cp + c, dz) + b;
			if (mode) {
				v -= mu;
				v *= v;
			}
			s += v;
		}
	}
	sh[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && c < cp) {
		float t = 0.0f;
		for (int y = 0; y < BN_TY; y++)
			t += sh[y][threadIdx.x];
		part[(long)blockIdx.y * cp + c] = t;
	}
}

/* One thread per channel: sums the partials in double. */
__global__ void k_bn_fin(const float *part, long M, int cp, int creal, int mode, float *mean,
			 float *var, float *rstd, float *acc_mean, float *acc_var, float *acc_m2, int reset)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cp)
		return;
	double s = 0;
	for (int p = 0; p < TK_PARTS; p++)
		s += part[(long)p * cp + c];
	float v = c < creal ? (float)(s / (double)M) : 0.0f;
	if (mode == 0) {
		mean[c] = v;
		return;
	}
	var[c] = v;
	rstd[c] = c < creal ? rsqrtf(v + TK_EPS) : 0.0f;
	if (c < creal) {
		float mu = mean[c];
		acc_mean[c] = (reset ? 0.0f : acc_mean[c]) + mu;
		acc_var[c] = (reset ? 0.0f : acc_var[c]) + v;
		acc_m2[c] = (reset ? 0.0f : acc_m2[c]) + mu * mu;
	}
}

extern "C" cudaError_t tk_bn_stats(const void *z, nn_dtype dz, long M, int cp, int creal,
				   const float *bias, float *part, float *mean, float *var,
				   float *rstd, float *acc_mean, float *acc_var, float *acc_m2,
				   int reset, cudaStream_t s)
{
	dim3 g((cp + BN_TX - 1) / BN_TX, TK_PARTS), b(BN_TX, BN_TY);
	int fb = (cp + 127) / 128;
	k_bn_part<<<g, b, 0, s>>>(z, dz, M, cp, creal, bias, mean, 0, part);
	k_bn_fin<<<fb, 128, 0, s>>>(part, M, cp, creal, 0, mean, var, rstd, acc_mean, acc_var, acc_m2, reset);
	k_bn_part<<<g, b, 0, s>>>(z, dz, M, cp, creal, bias, mean, 1, part);
	k_bn_fin<<<fb, 128, 0, s>>>(part, M, cp, creal, 1, mean, var, rstd, acc_mean, acc_var, acc_m2, reset);
	return cudaGetLastError();
}

__global__ void k_bn_apply(const void *z, int dz, long M, int cp, int creal, const float *bias,
			   const float *mean, const float *rstd, const float *gamma,
			   const float *beta, const void *skip, int dskip, int relu, void *y, int dy)
{
	long total = M * cp;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % cp);
		float v = 0.0f;
		if (c < creal) {
			v = gamma[c] * (cuda_ld(z, i, dz) + bias[c] - mean[c]) * rstd[c] + beta[c];
			if (skip)
				v += cuda_ld(skip, i, dskip);
			if (relu && v < 0.0f)
				v = 0.0f;
		}
		cuda_st(y, i, dy, v);
	}
}

extern "C" cudaError_t tk_bn_apply(const void *z, nn_dtype dz, long M, int cp, int creal,
				   const float *bias, const float *mean, const float *rstd,
				   const float *gamma, const float *beta, const void *skip,
				   nn_dtype dskip, int relu, void *y, nn_dtype dy, cudaStream_t s)
{
	k_bn_apply<<<cuda_grid(M * cp, 256), 256, 0, s>>>(z, dz, M, cp, creal, bias, mean, rstd,
							   gamma, beta, skip, dskip, relu, y, dy);
	return cudaGetLastError();
}

/* Partials of sum dy, sum dy * xhat, sum xhat into part[k][TK_PARTS][cp]. */
__global__ void k_bnb_part(const void *g, int dg, const void *y, int dyt, int relu, const void *z,
			   int dz, long M, int cp, int creal, const float *bias, const float *mean,
			   const float *rstd, float *part)
{
	__shared__ float sh[3][BN_TY][BN_TX];
	int c = blockIdx.x * BN_TX + threadIdx.x;
	float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
	if (c < creal) {
		float b = bias[c], mu = mean[c], rs = rstd[c];
		for (long r = blockIdx.y * BN_TY + threadIdx.y; r < M; r += (long)TK_PARTS * BN_TY) {
			long i = r * cp + c;
			float d = cuda_ld(g, i, dg);
			if (relu && !(cuda_ld(y, i, dyt) > 0.0f))
				d = 0.0f;
			float xh = (cuda_ld(z, i, dz) + b - mu) * rs;
			s0 += d;
			s1 += d * xh;
			s2 += xh;
		}
	}
	sh[0][threadIdx.y][threadIdx.x] = s0;
	sh[1][threadIdx.y][threadIdx.x] = s1;
	sh[2][threadIdx.y][threadIdx.x] = s2;
	__syncthreads();
	if (threadIdx.y < 3 && c < cp) {
		float t = 0.0f;
		for (int k = 0; k < BN_TY; k++)
			t += sh[threadIdx.y][k][threadIdx.x];
		part[((long)threadIdx.y * TK_PARTS + blockIdx.y) * cp + c] = t;
	}
}

__global__ void k_bnb_fin(const float *part, long M, int cp, int creal, const float *gamma,
			  const float *rstd, float *loc, float *ggamma, float *gbeta, float *gbias,
			  int acc)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cp)
		return;
	double s[3] = { 0, 0, 0 };
	for (int k = 0; k < 3; k++)
		for (int p = 0; p < TK_PARTS; p++)
			s[k] += part[((long)k * TK_PARTS + p) * cp + c];
	if (c >= creal) {
		loc[c] = loc[cp + c] = 0.0f;
		return;
	}
	float dbeta = (float)s[0], dgamma = (float)s[1];
	loc[c] = dbeta;
	loc[cp + c] = dgamma;
	/* The conv bias sees the sum of dz: zero in exact arithmetic. */
	float dbias = (float)((double)gamma[c] * rstd[c] *
			      (s[0] - (double)dbeta - (double)dgamma * s[2] / (double)M));
	ggamma[c] = (acc ? ggamma[c] : 0.0f) + dgamma;
	gbeta[c] = (acc ? gbeta[c] : 0.0f) + dbeta;
	gbias[c] = (acc ? gbias[c] : 0.0f) + dbias;
}

__global__ void k_bnb_dx(const void *g, int dg, const void *y, int dyt, int relu, const void *z,
			 int dz, long M, int cp, int creal, const float *bias, const float *mean,
			 const float *rstd, const float *gamma, const float *loc, void *dzout,
			 void *dskip, int ds)
{
	long total = M * cp;
	float invM = 1.0f / (float)M;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % cp);
		float d = 0.0f, dx = 0.0f;
		if (c < creal) {
			d = cuda_ld(g, i, dg);
			if (relu && !(cuda_ld(y, i, dyt) > 0.0f))
				d = 0.0f;
			float xh = (cuda_ld(z, i, dz) + bias[c] - mean[c]) * rstd[c];
			dx = gamma[c] * rstd[c] * (d - loc[c] * invM - xh * loc[cp + c] * invM);
		}
		cuda_st(dzout, i, dz, dx);
		if (dskip)
			cuda_st(dskip, i, ds, d);
	}
}

extern "C" cudaError_t tk_bn_backward(const void *g, nn_dtype dg, const void *y, nn_dtype dyt,
				      int relu, const void *z, nn_dtype dz, long M, int cp,
				      int creal, const float *bias, const float *mean,
				      const float *rstd, const float *gamma, float *part, float *loc,
				      float *ggamma, float *gbeta, float *gbias, int acc,
				      void *dzout, void *dskip, nn_dtype ds, cudaStream_t s)
{
	dim3 gr((cp + BN_TX - 1) / BN_TX, TK_PARTS), b(BN_TX, BN_TY);
	k_bnb_part<<<gr, b, 0, s>>>(g, dg, y, dyt, relu, z, dz, M, cp, creal, bias, mean, rstd, part);
	k_bnb_fin<<<(cp + 127) / 128, 128, 0, s>>>(part, M, cp, creal, gamma, rstd, loc, ggamma,
						   gbeta, gbias, acc);
	k_bnb_dx<<<cuda_grid(M * cp, 256), 256, 0, s>>>(g, dg, y, dyt, relu, z, dz, M, cp, creal,
							 bias, mean, rstd, gamma, loc, dzout,
							 dskip, ds);
	return cudaGetLastError();
}

/* ---- fully connected helpers ---------------------------------------------- */

__global__ void k_bias_act(float *y, const float *b, int rows, int n, int relu)
{
	long total = (long)rows * n;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		float v = y[i] + b[i % n];
		y[i] = relu && v < 0.0f ? 0.0f : v;
	}
}

extern "C" cudaError_t tk_bias_act(float *y, const float *b, int rows, int n, int relu,
				   cudaStream_t s)
{
	k_bias_act<<<cuda_grid((long)rows * n, 256), 256, 0, s>>>(y, b, rows, n, relu);
	return cudaGetLastError();
}

__global__ void k_relu_bwd(float *dy, const float *y, long n)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x)
		if (!(y[i] > 0.0f))
			dy[i] = 0.0f;
}

extern "C" cudaError_t tk_relu_backward(float *dy, const float *y, long n, cudaStream_t s)
{
	k_relu_bwd<<<cuda_grid(n, 256), 256, 0, s>>>(dy, y, n);
	return cudaGetLastError();
}

__global__ void k_colsum(const float *x, int rows, int n, float *out, int acc)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= n)
		return;
	double s = 0;
	for (int r = 0; r < rows; r++)
		s += x[(long)r * n + j];
	out[j] = (acc ? out[j] : 0.0f) + (float)s;
}

extern "C" cudaError_t tk_colsum(const float *x, int rows, int n, float *out, int acc,
				 cudaStream_t s)
{
	k_colsum<<<(n + 127) / 128, 128, 0, s>>>(x, rows, n, out, acc);
	return cudaGetLastError();
}

__global__ void k_fc_small(const float *x, int rows, int nin, const float *w, const float *b,
			   int nout, int act, float *y)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i >= (long)rows * nout)
		return;
	int o = (int)(i % nout);
	long r = i / nout;
	float s = b[o];
	for (int j = 0; j < nin; j++)
		s += x[r * nin + j] * w[(long)o * nin + j];
	if (act == TK_ACT_RELU && s < 0.0f)
		s = 0.0f;
	else if (act == TK_ACT_SE_GATE && o < nout / 2)
		s = 1.0f / (1.0f + expf(-s));
	y[i] = s;
}

extern "C" cudaError_t tk_fc_small(const float *x, int rows, int nin, const float *w,
				   const float *b, int nout, int act, float *y, cudaStream_t s)
{
	k_fc_small<<<cuda_grid((long)rows * nout, 128), 128, 0, s>>>(x, rows, nin, w, b, nout, act,
								      y);
	return cudaGetLastError();
}

__global__ void k_fc_small_dx(int rows, int nin, const float *w, int nout, const float *dy,
			      float *dx)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i >= (long)rows * nin)
		return;
	int j = (int)(i % nin);
	long r = i / nin;
	float s = 0.0f;
	for (int o = 0; o < nout; o++)
		s += dy[r * nout + o] * w[(long)o * nin + j];
	dx[i] = s;
}

/* One thread per weight (o, j), and j == nin for the bias. */
__global__ void k_fc_small_dw(const float *x, int rows, int nin, int nout, const float *dy,
			      float *gw, float *gb, int acc)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i >= (long)nout * (nin + 1))
		return;
	int j = (int)(i % (nin + 1));
	int o = (int)(i / (nin + 1));
	double s = 0;
	for (int r = 0; r < rows; r++)
		s += (double)dy[(long)r * nout + o] * (j < nin ? x[(long)r * nin + j] : 1.0f);
	if (j < nin)
		gw[(long)o * nin + j] = (acc ? gw[(long)o * nin + j] : 0.0f) + (float)s;
	else
		gb[o] = (acc ? gb[o] : 0.0f) + (float)s;
}

extern "C" cudaError_t tk_fc_small_backward(const float *x, int rows, int nin, const float *w,
					    int nout, const float *dy, float *dx, float *gw,
					    float *gb, int acc, cudaStream_t s)
{
	k_fc_small_dx<<<cuda_grid((long)rows * nin, 128), 128, 0, s>>>(rows, nin, w, nout, dy, dx);
	k_fc_small_dw<<<cuda_grid((long)nout * (nin + 1), 128), 128, 0, s>>>(x, rows, nin, nout, dy,
									      gw, gb, acc);
	return cudaGetLastError();
}

/* ---- squeeze-excitation --------------------------------------------------------- */

/* Grid (channels / SE_TX, positions): a thread sums one channel of one
 * position over its hw points, a column of NHWC rows, so a warp's loads
 * are one row's adjacent channels. */
#define SE_TX 128

static dim3 se_grid(int m, int cp)
{
	return dim3((unsigned)((cp + SE_TX - 1) / SE_TX), (unsigned)(m < 65535 ? m : 65535));
}

/* pw: [m][hw] each point's weight in the means (masked pooling), summed in
 * double as tr_se_forward sums them; NULL: the plain mean. */
__global__ void k_se_pool(const void *u, int du, const float *pw, int m, int hw, int cp, int creal,
			  float *pool)
{
	int c = blockIdx.x * SE_TX + threadIdx.x;
	if (c >= creal)
		return;
	for (long n = blockIdx.y; n < m; n += gridDim.y) {
		double s = 0;
		if (pw) {
			for (int p = 0; p < hw; p++)
				s += (double)cuda_ld(u, (n * hw + p) * cp + c, du) * pw[n * hw + p];
			pool[n * creal + c] = (float)s;
			continue;
		}
		for (int p = 0; p < hw; p++)
			s += cuda_ld(u, (n * hw + p) * cp + c, du);
		pool[n * creal + c] = (float)(s / hw);
	}
}

/* One thread per position: nn_board_pool_weights over its NHWC planes. */
__global__ void k_board_pool_weights(const void *x, int dx, int m, int hw, int cin, int on,
				     int also, float *w)
{
	long n = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (n >= m)
		return;
	const long at = n * hw * cin;
	int k = 0;
	for (int p = 0; p < hw; p++) {
		bool in = on < 0 || cuda_ld(x, at + (long)p * cin + on, dx) > 0.5f ||
			  (also >= 0 && cuda_ld(x, at + (long)p * cin + also, dx) > 0.5f);
		w[n * hw + p] = in ? 1.0f : 0.0f;
		k += in;
	}
	if (!k) {
		for (int p = 0; p < hw; p++)
			w[n * hw + p] = 1.0f;
		k = hw;
	}
	for (int p = 0; p < hw; p++)
		w[n * hw + p] /= (float)k;
}

extern "C" cudaError_t tk_board_pool_weights(const void *x, nn_dtype dx, int m, int hw, int cin,
					     int on, int also, float *w, cudaStream_t s)
{
	if (m > 0)
		k_board_pool_weights<<<(m + 127) / 128, 128, 0, s>>>(x, dx, m, hw, cin, on, also, w);
	return cudaGetLastError();
}

__global__ void k_se_apply(const void *u, int du, const float *gate, long M, int hw, int cp,
			   int creal, const void *skip, int dskip, void *y, int dy)
{
	long total = M * cp;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % cp);
		if (c >= creal) {
			cuda_st(y, i, dy, 0.0f);
			continue;
		}
		const float *gt = gate + (i / cp / hw) * 2 * creal; /* position i / cp / hw */
		float v = gt[c] * cuda_ld(u, i, du) + gt[creal + c] +
			  (skip ? cuda_ld(skip, i, dskip) : 0.0f);
		cuda_st(y, i, dy, v < 0.0f ? 0.0f : v); /* NaN stays NaN, as k_bn_apply */
	}
}

extern "C" cudaError_t tk_se_forward(const tk_se *e, const void *u, nn_dtype du, const void *skip,
				     nn_dtype dskip, void *y, nn_dtype dy, cudaStream_t s)
{
	int C = e->creal;
	long M = (long)e->m * e->hw;
	cudaError_t r;
	k_se_pool<<<se_grid(e->m, e->cp), SE_TX, 0, s>>>(u, du, e->pw, e->m, e->hw, e->cp, C,
						     e->pool);
	if ((r = tk_fc_small(e->pool, e->m, C, e->w1, e->b1, e->s, TK_ACT_RELU, e->hid, s)) !=
		    cudaSuccess ||
	    (r = tk_fc_small(e->hid, e->m, e->s, e->w2, e->b2, 2 * C, TK_ACT_SE_GATE, e->gate, s)) !=
		    cudaSuccess)
		return r;
	k_se_apply<<<cuda_grid(M * e->cp, 256), 256, 0, s>>>(u, du, e->gate, M, e->hw, e->cp, C,
							      skip, dskip, y, dy);
	return cudaGetLastError();
}

/* As k_se_pool, over every padded channel: the masked gradient of its
 * points into gs (0 past creal), its sums against u and alone into dz. */
__global__ void k_se_bwd(const void *g, int dg, const void *y, int dyt, const void *u, int du,
			 const float *gate, int m, int hw, int cp, int creal, void *gs, int dgs,
			 float *dz)
{
	int c = blockIdx.x * SE_TX + threadIdx.x;
	if (c >= cp)
		return;
	for (long n = blockIdx.y; n < m; n += gridDim.y) {
		double sg = 0, sb = 0;
		for (int p = 0; p < hw; p++) {
			long at = (n * hw + p) * cp + c;
			float d = 0.0f;
			if (c < creal && cuda_ld(y, at, dyt) > 0.0f)
				d = cuda_ld(g, at, dg);
			cuda_st(gs, at, dgs, d);
			sg += (double)d * cuda_ld(u, at, du);
			sb += d;
		}
		if (c < creal) {
			double gt = gate[n * 2 * creal + c];
			dz[n * 2 * creal + c] = (float)(sg * gt * (1.0 - gt));
			dz[n * 2 * creal + creal + c] = (float)sb;
		}
	}
}

__global__ void k_se_bwd_u(const void *gs, int dgs, const float *gate, const float *dpool,
			   const float *pw, long M, int hw, int cp, int creal, void *du, int dut)
{
	long total = M * cp;
	float inv = 1.0f / (float)hw;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % cp);
		float v = 0.0f;
		if (c < creal) {
			long n = i / cp / hw;
			/* The mean's gradient: each point's weight in it. */
			float wp = pw ? pw[i / cp] : inv; /* point i / cp of all M */
			v = gate[n * 2 * creal + c] * cuda_ld(gs, i, dgs) +
			    dpool[n * creal + c] * wp;
		}
		cuda_st(du, i, dut, v);
	}
}

/* The gate's gradient (k_se_bwd), back through se2, its ReLU and se1 to
 * the means (dpool), then to u (k_se_bwd_u). */
extern "C" cudaError_t tk_se_backward(const tk_se *e, const void *g, nn_dtype dg, const void *y,
				      nn_dtype dyt, const void *u, nn_dtype du, void *gs,
				      nn_dtype dgs, void *gu, nn_dtype dgu, cudaStream_t s)
{
	int C = e->creal, m = e->m;
	long M = (long)m * e->hw;
	cudaError_t r;
	k_se_bwd<<<se_grid(m, e->cp), SE_TX, 0, s>>>(g, dg, y, dyt, u, du, e->gate, m, e->hw, e->cp,
						     C, gs, dgs, e->dz);
	if ((r = tk_fc_small_backward(e->hid, m, e->s, e->w2, 2 * C, e->dz, e->dhid, e->gw2, e->gb2,
				      1, s)) != cudaSuccess ||
	    (r = tk_relu_backward(e->dhid, e->hid, (long)m * e->s, s)) != cudaSuccess ||
	    (r = tk_fc_small_backward(e->pool, m, C, e->w1, e->s, e->dhid, e->dpool, e->gw1, e->gb1,
				      1, s)) != cudaSuccess)
		return r;
	k_se_bwd_u<<<cuda_grid(M * e->cp, 256), 256, 0, s>>>(gs, dgs, e->gate, e->dpool, e->pw, M,
							      e->hw, e->cp, C, gu, dgu);
	return cudaGetLastError();
}

/* ---- losses ------------------------------------------------------------------- */

#define LOSS_THREADS 256

/* Block-wide reduction of two doubles with a maximum for the first when
 * domax. */
static __device__ double block_sum(double v, double *sh)
{
	int t = threadIdx.x;
	sh[t] = v;
	__syncthreads();
	for (int k = LOSS_THREADS / 2; k > 0; k >>= 1) {
		if (t < k)
			sh[t] += sh[t + k];
		__syncthreads();
	}
	double r = sh[0];
	__syncthreads();
	return r;
}

static __device__ double block_max(double v, double *sh)
{
	int t = threadIdx.x;
	sh[t] = v;
	__syncthreads();
	for (int k = LOSS_THREADS / 2; k > 0; k >>= 1) {
		if (t < k && sh[t + k] > sh[t])
			sh[t] = sh[t + k];
		__syncthreads();
	}
	double r = sh[0];
	__syncthreads();
	return r;
}

/* The softmax cross-entropy of one row of logits z against the target p
 * (train_loss_policy, cpu_train.c), by the whole block: the row's loss
 * (on every thread), and its gradient into dz as (float)(dL/dz * inv_n)
 * * w * scale (w the loss's weight). A target of zeros gives 0 and 0. */
static __device__ double policy_ce(const float *z, const float *p, int np, float inv_n, float w,
				   float scale, float *dz, double *sh)
{
	double m = -INFINITY;
	for (int a = threadIdx.x; a < np; a += LOSS_THREADS)
		m = fmax(m, (double)z[a]);
	m = block_max(m, sh);
	double sum = 0, psum = 0, dot = 0;
	for (int a = threadIdx.x; a < np; a += LOSS_THREADS) {
		sum += exp(z[a] - m);
		psum += p[a];
		dot += p[a] * (z[a] - m);
	}
	sum = block_sum(sum, sh);
	psum = block_sum(psum, sh);
	dot = block_sum(dot, sh);
	for (int a = threadIdx.x; a < np; a += LOSS_THREADS)
		dz[a] = (float)((psum * exp(z[a] - m) / sum - p[a]) * inv_n) * w * scale;
	return psum * log(sum) - dot;
}

/* One block per row, as train_loss_policy / train_loss_value (cpu_train.c). */
__global__ void k_loss(const float *logits, const float *policy, int np, const float *vout,
		       const float *value, const float *wdl, int vo, float inv_n, float scale,
		       float vw, float *dlogits, float *dvout, float *rowloss)
{
	__shared__ double sh[LOSS_THREADS];
	long r = blockIdx.x;
	double pl = policy_ce(logits + r * np, policy + r * np, np, inv_n, 1.0f, scale,
			      dlogits + r * np, sh);
	if (threadIdx.x != 0)
		return;
	double vl;
	if (vo == 1) {
		double v = tanh((double)vout[r]), e = v - value[r];
		vl = e * e;
		dvout[r] = (float)(2.0 * e * (1.0 - v * v) * inv_n) * vw * scale;
	} else {
		const float *o = vout + 3 * r;
		double t[3], mx = fmax(o[0], fmax(o[1], o[2])), s = 0, tsum = 0, d = 0;
		if (wdl) {
			for (int k = 0; k < 3; k++)
				t[k] = wdl[3 * r + k];
		} else {
			double zz = value[r];
			t[0] = zz > 0 ? zz : 0;
			t[2] = zz < 0 ? -zz : 0;
			t[1] = 1.0 - fabs(zz);
		}
		for (int k = 0; k < 3; k++) {
			s += exp(o[k] - mx);
			tsum += t[k];
			d += t[k] * (o[k] - mx);
		}
		vl = tsum * log(s) - d;
		for (int k = 0; k < 3; k++)
			dvout[3 * r + k] =
				(float)((tsum * exp(o[k] - mx) / s - t[k]) * inv_n) * vw * scale;
	}
	rowloss[2 * r] = (float)pl;
	rowloss[2 * r + 1] = (float)vl;
}

extern "C" cudaError_t tk_loss(const float *logits, const float *policy, int np,
			       const float *vout, const float *value, const float *wdl, int vo,
			       int m, float inv_n, float scale, float vw, float *dlogits,
			       float *dvout, float *rowloss, cudaStream_t s)
{
	k_loss<<<m, LOSS_THREADS, 0, s>>>(logits, policy, np, vout, value, wdl, vo, inv_n, scale, vw,
					  dlogits, dvout, rowloss);
	return cudaGetLastError();
}

/* One block per row: the opponent-reply head's loss (policy_ce). */
__global__ void k_policy_loss(const float *logits, const float *target, int np, float inv_n,
			      float w, float scale, float *dlogits, float *rowloss)
{
	__shared__ double sh[LOSS_THREADS];
	long r = blockIdx.x;
	double l = policy_ce(logits + r * np, target + r * np, np, inv_n, w, scale,
			     dlogits + r * np, sh);
	if (threadIdx.x == 0)
		rowloss[r] = (float)l;
}

extern "C" cudaError_t tk_policy_loss(const float *logits, const float *target, int np, int m,
				      float inv_n, float w, float scale, float *dlogits,
				      float *rowloss, cudaStream_t s)
{
	k_policy_loss<<<m, LOSS_THREADS, 0, s>>>(logits, target, np, inv_n, w, scale, dlogits,
						  rowloss);
	return cudaGetLastError();
}

__global__ void k_loss_sum(const float *rowloss, int m, float inv_n, float vw, float rw, float ow,
			   float sw, float *tail, int acc)
{
	__shared__ double sh[LOSS_THREADS];
	double a = 0, b = 0;
	for (int r = threadIdx.x; r < m; r += LOSS_THREADS) {
		a += rowloss[2 * r];
		b += rowloss[2 * r + 1];
	}
	a = block_sum(a, sh);
	b = block_sum(b, sh);
	if (threadIdx.x == 0) {
		float pl = (acc ? tail[1] : 0.0f) + (float)(a * inv_n);
		float vl = (acc ? tail[2] : 0.0f) + (float)(b * inv_n);
		tail[0] = pl + vw * vl + rw * tail[6] + ow * tail[4] + sw * tail[5];
		tail[1] = pl;
		tail[2] = vl;
		tail[3] = 1.0f;
	}
}

extern "C" cudaError_t tk_loss_sum(const float *rowloss, int m, float inv_n, float vw, float rw,
				   float ow, float sw, float *tail, int acc, cudaStream_t s)
{
	k_loss_sum<<<1, LOSS_THREADS, 0, s>>>(rowloss, m, inv_n, vw, rw, ow, sw, tail, acc);
	return cudaGetLastError();
}

/* ---- the training heads (ownership, score) ------------------------------------ */

__global__ void k_own_loss(const float *x, long rows, int ld, int vc, int hw, const float *w,
			   const float *b, const float *own, const float *own_w, float gscale,
			   float *dz, float *rowloss)
{
	for (long r = blockIdx.x * (long)blockDim.x + threadIdx.x; r < rows;
	     r += (long)gridDim.x * blockDim.x) {
		const float *xr = x + r * ld;
		double z = b[0];
		for (int c = 0; c < vc; c++)
			z += (double)w[c] * xr[c];
		/* -[a log q + (1 - a) log(1 - q)], q = (1 + tanh z) / 2 =
		 * sigmoid(2z), a = (1 + t) / 2: softplus(2z) - 2 a z, as the
		 * CPU's. */
		double t = own[r], wt = own_w[r / hw], u = 2.0 * z, a = (1.0 + t) / 2.0;
		double sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
		rowloss[r] = (float)(wt * (sp - a * u));
		dz[r] = (float)(gscale * wt * (tanh(z) - t));
	}
}

extern "C" cudaError_t tk_own_loss(const float *x, long rows, int ld, int vc, int hw,
				   const float *w, const float *b, const float *own,
				   const float *own_w, float gscale, float *dz, float *rowloss,
				   cudaStream_t s)
{
	k_own_loss<<<cuda_grid(rows, 256), 256, 0, s>>>(x, rows, ld, vc, hw, w, b, own, own_w,
							 gscale, dz, rowloss);
	return cudaGetLastError();
}

__global__ void k_score_loss(const float *sc, int m, const float *score, const float *score_w,
			     float gscale, float *dy, float *rowloss)
{
	for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < m; r += gridDim.x * blockDim.x) {
		double e = (double)sc[r] - score[r], wt = score_w[r];
		rowloss[r] = (float)(wt * e * e);
		dy[r] = (float)(gscale * wt * 2.0 * e);
	}
}

extern "C" cudaError_t tk_score_loss(const float *s, int m, const float *score,
				     const float *score_w, float gscale, float *dy, float *rowloss,
				     cudaStream_t st)
{
	k_score_loss<<<cuda_grid(m, 128), 128, 0, st>>>(s, m, score, score_w, gscale, dy, rowloss);
	return cudaGetLastError();
}

__global__ void k_sum_into(const float *x, long n, float f, float *out)
{
	__shared__ double sh[LOSS_THREADS];
	double a = 0;
	for (long i = threadIdx.x; i < n; i += LOSS_THREADS)
		a += x[i];
	a = block_sum(a, sh);
	if (threadIdx.x == 0)
		out[0] += (float)(a * f);
}

extern "C" cudaError_t tk_sum_into(const float *x, long n, float f, float *out, cudaStream_t s)
{
	k_sum_into<<<1, LOSS_THREADS, 0, s>>>(x, n, f, out);
	return cudaGetLastError();
}

/* Block j < n: output j's weight; block n: the bias. */
__global__ void k_dot_rows(const float *x, long rows, int ld, int n, const float *dy, float *gw,
			   float *gb)
{
	__shared__ double sh[LOSS_THREADS];
	int j = blockIdx.x;
	double a = 0;
	for (long r = threadIdx.x; r < rows; r += LOSS_THREADS)
		a += (double)dy[r] * (j < n ? x[r * ld + j] : 1.0f);
	a = block_sum(a, sh);
	if (threadIdx.x == 0) {
		if (j < n)
			gw[j] += (float)a;
		else
			gb[0] += (float)a;
	}
}

extern "C" cudaError_t tk_dot_rows(const float *x, long rows, int ld, int n, const float *dy,
				   float *gw, float *gb, cudaStream_t s)
{
	k_dot_rows<<<n + 1, LOSS_THREADS, 0, s>>>(x, rows, ld, n, dy, gw, gb);
	return cudaGetLastError();
}

__global__ void k_add_outer(float *dx, long rows, int ld, int n, const float *dy, const float *w)
{
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < rows * n;
	     i += (long)gridDim.x * blockDim.x) {
		long r = i / n;
		int j = (int)(i % n);
		dx[r * ld + j] += dy[r] * w[j];
	}
}

extern "C" cudaError_t tk_add_outer(float *dx, long rows, int ld, int n, const float *dy,
				    const float *w, cudaStream_t s)
{
	k_add_outer<<<cuda_grid(rows * n, 256), 256, 0, s>>>(dx, rows, ld, n, dy, w);
	return cudaGetLastError();
}

/* ---- the step ------------------------------------------------------------------ */

#define NORM_THREADS 256

__global__ void k_norm_part(const float *grad, const float *w, const uint8_t *role, long n,
			    float inv_scale, float l2c, double *part)
{
	__shared__ double sh[NORM_THREADS];
	double g2 = 0, w2 = 0, bad = 0;
	for (long i = blockIdx.x * (long)NORM_THREADS + threadIdx.x; i < n;
	     i += (long)TK_NORM_PARTS * NORM_THREADS) {
		float g = grad[i];
		if (!isfinite(g))
			bad += 1;
		g *= inv_scale;
		if (role[i] == TK_ROLE_DECAY) {
			g += l2c * w[i];
			w2 += (double)w[i] * w[i];
		}
		g2 += (double)g * g;
	}
	double v[3] = { g2, w2, bad };
	for (int k = 0; k < 3; k++) {
		sh[threadIdx.x] = v[k];
		__syncthreads();
		for (int h = NORM_THREADS / 2; h > 0; h >>= 1) {
			if (threadIdx.x < h)
				sh[threadIdx.x] += sh[threadIdx.x + h];
			__syncthreads();
		}
		if (threadIdx.x == 0)
			part[3 * blockIdx.x + k] = sh[0];
		__syncthreads();
	}
}

__global__ void k_norm_fin(const double *part, double clip, tk_step_result *r)
{
	if (threadIdx.x != 0)
		return;
	double s[3] = { 0, 0, 0 };
	for (int p = 0; p < TK_NORM_PARTS; p++)
		for (int k = 0; k < 3; k++)
			s[k] += part[3 * p + k];
	r->norm2 = s[0];
	r->wsq = s[1];
	r->bad = s[2] > 0 || !isfinite(s[0]);
	double norm = sqrt(s[0]);
	r->coef = clip > 0 && norm > clip ? (float)(clip / norm) : 1.0f;
}

extern "C" cudaError_t tk_grad_norm(const float *grad, const float *w, const uint8_t *role, long n,
				    float inv_scale, float l2c, double clip, double *part,
				    tk_step_result *r, cudaStream_t s)
{
	k_norm_part<<<TK_NORM_PARTS, NORM_THREADS, 0, s>>>(grad, w, role, n, inv_scale, l2c, part);
	k_norm_fin<<<1, 32, 0, s>>>(part, clip, r);
	return cudaGetLastError();
}

/* The CPU trainer's update (cpu_train.c, tr_update), element by element. */
__global__ void k_optimizer(float *w, const float *grad, const uint8_t *role, float *m0, float *m1,
			    long n, tk_opt_params p, const tk_step_result *r)
{
	if (r->bad)
		return;
	float coef = r->coef;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x) {
		int ro = role[i];
		if (ro == TK_ROLE_BUFFER)
			continue;
		float wi = w[i], g = grad[i] * p.inv_scale;
		if (!p.adamw) {
			if (ro == TK_ROLE_DECAY)
				g += p.l2c * wi;
			g *= coef;
			float b = p.momentum * m0[i] + g;
			m0[i] = b;
			w[i] = wi - p.lr * (g + p.momentum * b);
		} else {
			if (ro == TK_ROLE_DECAY)
				wi *= p.decay;
			g *= coef;
			float m = p.b1 * m0[i] + (1.0f - p.b1) * g;
			float v = p.b2 * m1[i] + (1.0f - p.b2) * g * g;
			m0[i] = m;
			m1[i] = v;
			w[i] = wi - (p.lr / p.bc1) * m / (sqrtf(v) / p.sbc2 + p.eps);
		}
	}
}

extern "C" cudaError_t tk_optimizer(float *w, const float *grad, const uint8_t *role, float *m0,
				    float *m1, long n, tk_opt_params p, const tk_step_result *r,
				    cudaStream_t s)
{
	k_optimizer<<<cuda_grid(n, 256) > 4096 ? 4096 : cuda_grid(n, 256), 256, 0, s>>>(
		w, grad, role, m0, m1, n, p, r);
	return cudaGetLastError();
}

__global__ void k_running(float *w, const int32_t *rm, const int32_t *rv, const float *acc_mean,
			  const float *acc_var, const float *acc_m2, int J, float inv_k, float mo, float unbias,
			  const tk_step_result *r)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= J || r->bad)
		return;
	/* Micro-batches combined: the mean of their means, and the mean of
	 * their variances plus the variance of their means (exactly the
	 * variance when there is one). */
	float mean = acc_mean[j] * inv_k;
	float var = acc_var[j] * inv_k + (acc_m2[j] * inv_k - mean * mean);
	if (var < 0.0f)
		var = 0.0f;
	float keep = 1.0f - mo;
	w[rm[j]] = keep * w[rm[j]] + mo * mean;
	w[rv[j]] = keep * w[rv[j]] + mo * var * unbias;
}

extern "C" cudaError_t tk_running(float *w, const int32_t *rm, const int32_t *rv,
				  const float *acc_mean, const float *acc_var, const float *acc_m2, int J, float inv_k,
				  float mo, float unbias, const tk_step_result *r, cudaStream_t s)
{
	k_running<<<(J + 127) / 128, 128, 0, s>>>(w, rm, rv, acc_mean, acc_var, acc_m2, J, inv_k, mo, unbias,
						  r);
	return cudaGetLastError();
}
