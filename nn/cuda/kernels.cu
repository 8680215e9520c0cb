// kernels.cu: the CUDA backend's own kernels (kernels.h): input expansion,
// the epilogue of an unfused conv, squeeze-excitation and the heads' tail.
// cuDNN does the convolutions and cuBLAS the large FCs (cuda_backend.c).
// Everything accumulates in fp32; half is only the storage type.
#include "nn/cuda/kernels.h"

#include "nn/cuda/cuda_common.h"

namespace {

template <typename T>
__global__ void expand_packed(const uint32_t *packed, int batch, int planes, int hw, int c_pad,
			      T *out)
{
	int words = (hw + 31) / 32;
	long stride = (long)planes * (1 + words);
	long total = (long)batch * hw * c_pad;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % c_pad);
		long np = i / c_pad;
		int p = (int)(np % hw);
		long n = np / hw;
		float v = 0.0f;
		if (c < planes) {
			const uint32_t *rec = packed + n * stride;
			if (rec[planes + (long)c * words + (p >> 5)] >> (p & 31) & 1u)
				v = __uint_as_float(rec[c]);
		}
		cuda_st(out, i, v);
	}
}

template <typename T>
__global__ void expand_float(const float *in, int batch, int planes, int hw, int c_pad, T *out)
{
	long total = (long)batch * hw * c_pad;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % c_pad);
		long np = i / c_pad;
		int p = (int)(np % hw);
		long n = np / hw;
		cuda_st(out, i, c < planes ? in[(n * planes + c) * hw + p] : 0.0f);
	}
}

template <typename T>
__global__ void bias_res_act(T *y, const float *bias, const T *res, long rows, int c, int relu)
{
	long total = rows * c;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		float v = cuda_ld(y, i) + bias[i % c];
		if (res)
			v += cuda_ld(res, i);
		if (relu && v < 0.0f)
			v = 0.0f;
		cuda_st(y, i, v);
	}
}

// One block per position; shared memory: c pooled means, then se hidden.
template <typename T>
__global__ void se_gates(const T *x, const float *pw, int hw, int c_pad, int c, int se,
			 const float *w1, const float *b1, const float *w2, const float *b2,
			 float *gates)
{
	extern __shared__ float sh[];
	float *pool = sh, *hid = sh + c;
	long n = blockIdx.x;
	const T *xn = x + n * hw * (long)c_pad;
	const float *pn = pw ? pw + n * hw : NULL;
	for (int ch = threadIdx.x; ch < c; ch += blockDim.x) {
		float s = 0.0f;
		if (pn)
			for (int p = 0; p < hw; p++)
				s += pn[p] * cuda_ld(xn, (long)p * c_pad + ch);
		else {
			for (int p = 0; p < hw; p++)
				s += cuda_ld(xn, (long)p * c_pad + ch);
			s /= hw;
		}
		pool[ch] = s;
	}
	__syncthreads();
	for (int j = threadIdx.x; j < se; j += blockDim.x) {
		float s = b1[j];
		for (int ch = 0; ch < c; ch++)
			s += w1[(long)j * c + ch] * pool[ch];
		hid[j] = s > 0.0f ? s : 0.0f;
	}
	__syncthreads();
	for (int k = threadIdx.x; k < 2 * c; k += blockDim.x) {
		float s = b2[k];
		for (int j = 0; j < se; j++)
			s += w2[(long)k * se + j] * hid[j];
		gates[n * 2 * c + k] = s;
	}
}

template <typename T>
__global__ void se_apply(const T *x, const T *skip, const float *gates, T *out, int batch,
			 int hw, int c_pad, int c)
{
	long total = (long)batch * hw * c_pad;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int ch = (int)(i % c_pad);
		long n = i / ((long)c_pad * hw);
		float v = 0.0f;
		if (ch < c) {
			const float *g = gates + n * 2 * c;
			float s = 1.0f / (1.0f + expf(-g[ch]));
			v = s * cuda_ld(x, i) + g[c + ch] + cuda_ld(skip, i);
			if (v < 0.0f)
				v = 0.0f;
		}
		cuda_st(out, i, v);
	}
}

// One block per position; shared memory: vhid hidden units, 3 outputs.
__global__ void heads_finish(float *out, int stride, int np, const float *pbias, const float *vh,
			     int vhid, const float *b1, const float *w2, const float *b2, int vout)
{
	extern __shared__ float sh[];
	float *hid = sh, *z = sh + vhid;
	long n = blockIdx.x;
	float *row = out + n * stride;
	for (int i = threadIdx.x; i < np; i += blockDim.x)
		row[i] += pbias[i];
	for (int j = threadIdx.x; j < vhid; j += blockDim.x) {
		float s = vh[n * vhid + j] + b1[j];
		hid[j] = s > 0.0f ? s : 0.0f;
	}
	__syncthreads();
	for (int k = threadIdx.x; k < vout; k += blockDim.x) {
		float s = b2[k];
		for (int j = 0; j < vhid; j++)
			s += w2[(long)k * vhid + j] * hid[j];
		z[k] = s;
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	if (vout == 1) {
		float v = tanhf(z[0]);
		row[np] = v;
		row[np + 1] = (1.0f + v) * 0.5f;
		row[np + 2] = 0.0f;
		row[np + 3] = (1.0f - v) * 0.5f;
		return;
	}
	float m = fmaxf(z[0], fmaxf(z[1], z[2]));
	float e0 = expf(z[0] - m), e1 = expf(z[1] - m), e2 = expf(z[2] - m);
	float inv = 1.0f / (e0 + e1 + e2);
	row[np] = (e0 - e2) * inv;
	row[np + 1] = e0 * inv;
	row[np + 2] = e1 * inv;
	row[np + 3] = e2 * inv;
}

} // namespace


extern "C" cudaError_t nnk_expand_packed(nn_dtype dt, const uint32_t *packed, int batch,
					 int planes, int hw, int c_pad, void *out, cudaStream_t s)
{
	int g = cuda_grid((long)batch * hw * c_pad, 256);
	if (dt == NN_DTYPE_FP16)
		expand_packed<__half><<<g, 256, 0, s>>>(packed, batch, planes, hw, c_pad, (__half *)out);
	else
		expand_packed<float><<<g, 256, 0, s>>>(packed, batch, planes, hw, c_pad, (float *)out);
	return cudaGetLastError();
}

extern "C" cudaError_t nnk_expand_float(nn_dtype dt, const float *in, int batch, int planes,
					int hw, int c_pad, void *out, cudaStream_t s)
{
	int g = cuda_grid((long)batch * hw * c_pad, 256);
	if (dt == NN_DTYPE_FP16)
		expand_float<__half><<<g, 256, 0, s>>>(in, batch, planes, hw, c_pad, (__half *)out);
	else if (dt == NN_DTYPE_BF16)
		expand_float<__nv_bfloat16>
			<<<g, 256, 0, s>>>(in, batch, planes, hw, c_pad, (__nv_bfloat16 *)out);
	else
		expand_float<float><<<g, 256, 0, s>>>(in, batch, planes, hw, c_pad, (float *)out);
	return cudaGetLastError();
}

extern "C" cudaError_t nnk_bias_res_act(nn_dtype dt, void *y, const float *bias, const void *res,
					long rows, int c, int relu, cudaStream_t s)
{
	int g = cuda_grid(rows * c, 256);
	if (dt == NN_DTYPE_FP16)
		bias_res_act<__half><<<g, 256, 0, s>>>((__half *)y, bias, (const __half *)res, rows, c, relu);
	else
		bias_res_act<float><<<g, 256, 0, s>>>((float *)y, bias, (const float *)res, rows, c, relu);
	return cudaGetLastError();
}

extern "C" cudaError_t nnk_se_gates(nn_dtype dt, const void *x, const float *pw, int batch,
				    int hw, int c_pad, int c, int se, const float *w1,
				    const float *b1, const float *w2, const float *b2, float *gates,
				    cudaStream_t s)
{
	size_t shmem = sizeof(float) * (size_t)(c + se);
	if (dt == NN_DTYPE_FP16)
		se_gates<__half><<<batch, 256, shmem, s>>>((const __half *)x, pw, hw, c_pad, c, se, w1,
							  b1, w2, b2, gates);
	else
		se_gates<float><<<batch, 256, shmem, s>>>((const float *)x, pw, hw, c_pad, c, se, w1,
							 b1, w2, b2, gates);
	return cudaGetLastError();
}

extern "C" cudaError_t nnk_se_apply(nn_dtype dt, const void *x, const void *skip,
				    const float *gates, void *out, int batch, int hw, int c_pad,
				    int c, cudaStream_t s)
{
	int g = cuda_grid((long)batch * hw * c_pad, 256);
	if (dt == NN_DTYPE_FP16)
		se_apply<__half><<<g, 256, 0, s>>>((const __half *)x, (const __half *)skip, gates,
						   (__half *)out, batch, hw, c_pad, c);
	else
		se_apply<float><<<g, 256, 0, s>>>((const float *)x, (const float *)skip, gates,
						  (float *)out, batch, hw, c_pad, c);
	return cudaGetLastError();
}

extern "C" cudaError_t nnk_heads_finish(float *out, int stride, int np, const float *pbias,
					const float *vh, int vhid, const float *b1, const float *w2,
					const float *b2, int vout, int batch, cudaStream_t s)
{
	size_t shmem = sizeof(float) * (size_t)(vhid + 3);
	heads_finish<<<batch, 128, shmem, s>>>(out, stride, np, pbias, vh, vhid, b1, w2, b2, vout);
	return cudaGetLastError();
}
