/* cuda_dl.h: cuDNN and cuBLAS reached through a table filled by dlopen,
 * shared by the inference backend (cuda_backend.c) and the GPU trainer
 * (train/cuda/gpu_train.c).
 *
 * Linked, the two libraries cost every sente process (GTP on a CPU-only
 * machine too) about 0.35 s and 220 MB at start, so only libcudart is
 * linked. A file that includes this header after cudnn.h and cublas_v2.h
 * calls the functions by their usual names; the #defines below send every
 * call through the table. nn_cuda_dl_ready must have returned 0 first.
 *
 * Only for builds with CUDA and cuDNN (SENTE_HAVE_CUDA, SENTE_HAVE_CUDNN).
 */
#ifndef SENTE_NN_CUDA_DL_H
#define SENTE_NN_CUDA_DL_H

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <cublas_v2.h>
#include <cudnn.h>
#include <stddef.h>

/* Every cuDNN and cuBLAS function either user calls: the union. */
#define NN_CUDNN_FUNCS(X) \
	X(cudnnConvolutionBackwardData) \
	X(cudnnConvolutionBackwardFilter) \
	X(cudnnConvolutionBiasActivationForward) \
	X(cudnnConvolutionForward) \
	X(cudnnCreate) \
	X(cudnnCreateActivationDescriptor) \
	X(cudnnCreateConvolutionDescriptor) \
	X(cudnnCreateFilterDescriptor) \
	X(cudnnCreateTensorDescriptor) \
	X(cudnnDestroy) \
	X(cudnnDestroyActivationDescriptor) \
	X(cudnnDestroyConvolutionDescriptor) \
	X(cudnnDestroyFilterDescriptor) \
	X(cudnnDestroyTensorDescriptor) \
	X(cudnnFindConvolutionBackwardDataAlgorithmEx) \
	X(cudnnFindConvolutionBackwardFilterAlgorithmEx) \
	X(cudnnFindConvolutionForwardAlgorithmEx) \
	X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
	X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
	X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
	X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
	X(cudnnGetConvolutionForwardAlgorithm_v7) \
	X(cudnnGetConvolutionForwardWorkspaceSize) \
	X(cudnnGetErrorString) \
	X(cudnnSetActivationDescriptor) \
	X(cudnnSetConvolution2dDescriptor) \
	X(cudnnSetConvolutionMathType) \
	X(cudnnSetFilter4dDescriptor) \
	X(cudnnSetStream) \
	X(cudnnSetTensor4dDescriptor)
#define NN_CUBLAS_FUNCS(X) \
	X(cublasCreate_v2) \
	X(cublasDestroy_v2) \
	X(cublasGemmEx) \
	X(cublasGetStatusString) \
	X(cublasSetMathMode) \
	X(cublasSetStream_v2) \
	X(cublasSetWorkspace_v2)

#define NN_CUDA_DL_FIELD(f) __typeof__(&f) f;
typedef struct nn_cuda_dl_table {
	NN_CUDNN_FUNCS(NN_CUDA_DL_FIELD)
	NN_CUBLAS_FUNCS(NN_CUDA_DL_FIELD)
} nn_cuda_dl_table;
#undef NN_CUDA_DL_FIELD

/* The table (valid once nn_cuda_dl_ready has returned 0). */
extern nn_cuda_dl_table nn_cuda_dl;

/* Loads both libraries (once, thread-safe) and resolves every function.
 * 0 when usable, else -1 with the reason; needs no device. */
int nn_cuda_dl_ready(char *err, size_t errlen);

/* cuda_dl.c itself defines the table and must see the real names. */
#ifndef NN_CUDA_DL_IMPL
#define cudnnConvolutionBackwardData nn_cuda_dl.cudnnConvolutionBackwardData
#define cudnnConvolutionBackwardFilter nn_cuda_dl.cudnnConvolutionBackwardFilter
#define cudnnConvolutionBiasActivationForward nn_cuda_dl.cudnnConvolutionBiasActivationForward
#define cudnnConvolutionForward nn_cuda_dl.cudnnConvolutionForward
#define cudnnCreate nn_cuda_dl.cudnnCreate
#define cudnnCreateActivationDescriptor nn_cuda_dl.cudnnCreateActivationDescriptor
#define cudnnCreateConvolutionDescriptor nn_cuda_dl.cudnnCreateConvolutionDescriptor
#define cudnnCreateFilterDescriptor nn_cuda_dl.cudnnCreateFilterDescriptor
#define cudnnCreateTensorDescriptor nn_cuda_dl.cudnnCreateTensorDescriptor
#define cudnnDestroy nn_cuda_dl.cudnnDestroy
#define cudnnDestroyActivationDescriptor nn_cuda_dl.cudnnDestroyActivationDescriptor
#define cudnnDestroyConvolutionDescriptor nn_cuda_dl.cudnnDestroyConvolutionDescriptor
#define cudnnDestroyFilterDescriptor nn_cuda_dl.cudnnDestroyFilterDescriptor
#define cudnnDestroyTensorDescriptor nn_cuda_dl.cudnnDestroyTensorDescriptor
#define cudnnFindConvolutionBackwardDataAlgorithmEx nn_cuda_dl.cudnnFindConvolutionBackwardDataAlgorithmEx
#define cudnnFindConvolutionBackwardFilterAlgorithmEx nn_cuda_dl.cudnnFindConvolutionBackwardFilterAlgorithmEx
#define cudnnFindConvolutionForwardAlgorithmEx nn_cuda_dl.cudnnFindConvolutionForwardAlgorithmEx
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 nn_cuda_dl.cudnnGetConvolutionBackwardDataAlgorithm_v7
#define cudnnGetConvolutionBackwardDataWorkspaceSize nn_cuda_dl.cudnnGetConvolutionBackwardDataWorkspaceSize
#define cudnnGetConvolutionBackwardFilterAlgorithm_v7 nn_cuda_dl.cudnnGetConvolutionBackwardFilterAlgorithm_v7
#define cudnnGetConvolutionBackwardFilterWorkspaceSize nn_cuda_dl.cudnnGetConvolutionBackwardFilterWorkspaceSize
#define cudnnGetConvolutionForwardAlgorithm_v7 nn_cuda_dl.cudnnGetConvolutionForwardAlgorithm_v7
#define cudnnGetConvolutionForwardWorkspaceSize nn_cuda_dl.cudnnGetConvolutionForwardWorkspaceSize
#define cudnnGetErrorString nn_cuda_dl.cudnnGetErrorString
#define cudnnSetActivationDescriptor nn_cuda_dl.cudnnSetActivationDescriptor
#define cudnnSetConvolution2dDescriptor nn_cuda_dl.cudnnSetConvolution2dDescriptor
#define cudnnSetConvolutionMathType nn_cuda_dl.cudnnSetConvolutionMathType
#define cudnnSetFilter4dDescriptor nn_cuda_dl.cudnnSetFilter4dDescriptor
#define cudnnSetStream nn_cuda_dl.cudnnSetStream
#define cudnnSetTensor4dDescriptor nn_cuda_dl.cudnnSetTensor4dDescriptor
#define cublasCreate_v2 nn_cuda_dl.cublasCreate_v2
#define cublasDestroy_v2 nn_cuda_dl.cublasDestroy_v2
#define cublasGemmEx nn_cuda_dl.cublasGemmEx
#define cublasGetStatusString nn_cuda_dl.cublasGetStatusString
#define cublasSetMathMode nn_cuda_dl.cublasSetMathMode
#define cublasSetStream_v2 nn_cuda_dl.cublasSetStream_v2
#define cublasSetWorkspace_v2 nn_cuda_dl.cublasSetWorkspace_v2
#endif

#endif
#endif
