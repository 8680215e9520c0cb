/* Choosing a backend: --backend and --gpus parsing, falling back to the CPU
 * when CUDA cannot run, and what a build with CUDA can check without a
 * device (cuDNN and cuBLAS load and resolve). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "nn/backend.h"
#include "nn/cuda/cuda.h"

Test(nn_select, backend_names)
{
	nn_backend_kind k;
	cr_assert(nn_backend_kind_from_name("auto", &k) && k == NN_BACKEND_AUTO);
	cr_assert(nn_backend_kind_from_name("cpu", &k) && k == NN_BACKEND_CPU);
	cr_assert(nn_backend_kind_from_name("cuda", &k) && k == NN_BACKEND_CUDA);
	cr_assert_not(nn_backend_kind_from_name("gpu", &k));
	cr_assert_not(nn_backend_kind_from_name("", &k));
	cr_assert_str_eq(nn_backend_kind_name(NN_BACKEND_CUDA), "cuda");
	nn_dtype p;
	cr_assert(nn_dtype_from_name("fp16", &p) && p == NN_DTYPE_FP16);
	cr_assert_str_eq(nn_dtype_name(NN_DTYPE_FP16), "fp16");
	cr_assert_eq(nn_backend_options_default().kind, NN_BACKEND_AUTO);
}

Test(nn_select, gpu_lists)
{
	nn_backend_options o = nn_backend_options_default();
	char err[256];
	cr_assert(nn_backend_parse_gpus("0", &o, err, sizeof(err)));
	cr_assert_eq(o.n_gpus, 1);
	cr_assert(nn_backend_parse_gpus("0,1,3", &o, err, sizeof(err)));
	cr_assert_eq(o.n_gpus, 3);
	cr_assert(o.gpus[0] == 0 && o.gpus[1] == 1 && o.gpus[2] == 3);
	static const char *const bad[] = { "", "a", "0,", ",0", "0,,1", "1,1", "64", "-1", "0 1",
					   "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_not(nn_backend_parse_gpus(bad[i], &o, err, sizeof(err)), "'%s'", bad[i]);
		cr_assert(err[0], "'%s' is refused with a reason", bad[i]);
	}
	cr_assert_eq(o.n_gpus, 3, "a refused list leaves the old one");
}

static nn_net *sel_net(void)
{
	char err[256];
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 3);
	return net;
}

Test(nn_select, cuda_without_device_falls_back_to_cpu)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present: no fallback to see");
	nn_net *net = sel_net();
	char err[256];
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	static const nn_backend_kind kinds[] = { NN_BACKEND_CUDA, NN_BACKEND_AUTO };
	for (int i = 0; i < 2; i++) {
		o.kind = kinds[i];
		nn_backend_set s;
		cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(s.n, 1);
		cr_assert_eq(s.be[0]->ops, &nn_backend_cpu);
		cr_assert_eq(s.precision, NN_DTYPE_FP32);
		cr_assert(strncmp(s.what, "cpu fp32 (CUDA ", 15) == 0, "says why: %s", s.what);
		if (kinds[i] == NN_BACKEND_CUDA)
			cr_assert(strstr(s.what, "falling back"), "%s", s.what);
		float planes[27 * 81] = { 0 }, pol[82], val;
		cr_assert_eq(nn_backend_forward(s.be[0], 1, planes, pol, &val, NULL), 0);
		nn_backend_set_close(&s);
		nn_backend_set_close(&s); /* twice is fine */
	}
	/* fp16 asked for, CPU given: fp32, and it says so. */
	o.kind = NN_BACKEND_CUDA;
	o.precision = NN_DTYPE_FP16;
	o.precision_given = 1;
	nn_backend_set s;
	cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.precision, NN_DTYPE_FP32);
	cr_assert(strstr(s.what, "fp16 is GPU-only"), "%s", s.what);
	nn_backend_set_close(&s);
	nn_net_free(net);
}

Test(nn_select, cpu_is_cpu)
{
	nn_net *net = sel_net();
	char err[256];
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	o.kind = NN_BACKEND_CPU;
	nn_backend_set s;
	cr_assert_eq(nn_backend_set_open(&s, net, 2, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s.what, "cpu fp32");
	nn_backend_set_close(&s);
	nn_net_free(net);
}

/* CPU lanes: copies of the network that split the threads, each giving
 * the answers one backend gives; never more lanes than threads. */
Test(nn_select, cpu_lanes_split_the_threads)
{
	nn_net *net = sel_net();
	char err[256];
	nn_backend_options o = nn_backend_options_default();
	o.kind = NN_BACKEND_CPU;
	o.threads = 3;
	o.lanes = 2;
	nn_backend_set s, one;
	cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.lanes, 2);
	cr_assert_str_eq(s.what, "cpu fp32, 2 lanes over 3 threads");
	o.lanes = 1;
	o.threads = 1;
	cr_assert_eq(nn_backend_set_open(&one, net, 4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(one.n, 1);
	cr_assert_eq(one.lanes, 1);
	cr_assert_str_eq(one.what, "cpu fp32");
	float planes[4 * 27 * 81], pol[3][4 * 82], val[3][4];
	for (size_t i = 0; i < sizeof(planes) / sizeof(planes[0]); i++)
		planes[i] = (float)((i * 2654435761u) >> 31 & 1);
	cr_assert_eq(nn_backend_forward(one.be[0], 4, planes, pol[0], val[0], NULL), 0);
	for (int l = 0; l < 2; l++) {
		cr_assert_eq(nn_backend_forward(s.be[l], 4, planes, pol[l + 1], val[l + 1], NULL), 0);
		for (int i = 0; i < 4 * 82; i++)
			cr_assert_float_eq(pol[l + 1][i], pol[0][i], 1e-4, "lane %d logit %d", l, i);
		for (int i = 0; i < 4; i++)
			cr_assert_float_eq(val[l + 1][i], val[0][i], 1e-5, "lane %d value %d", l, i);
	}
	nn_backend_set_close(&s);
	nn_backend_set_close(&one);
	/* Four lanes on two threads: two lanes of one thread. */
	o.threads = 2;
	o.lanes = 4;
	cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.what, "cpu fp32, 2 lanes of 1 thread");
	nn_backend_set_close(&s);
	nn_net_free(net);
}

/* Making a CPU backend of one thread (a lane) gives the calling thread
 * its own OpenMP thread count back: the loop's thread makes lanes and
 * then trains, and a backend of the default count made after them must
 * not be built for one thread and run on two (that hung a test under
 * load). */
Test(nn_select, cpu_backend_leaves_the_callers_thread_count)
{
	int (*get)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
	void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	if (!get || !set)
		cr_skip_test("no OpenMP runtime loaded");
	nn_net *net = sel_net();
	char err[256];
	set(3);
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, 2, &o, err, sizeof(err));
	cr_assert(be, "%s", err);
	cr_assert_eq(get(), 3, "the caller's count after making a backend of one thread");
	nn_backend_free(be);
	nn_net_free(net);
}

Test(nn_select, cpu_backend_refuses_fp16)
{
	nn_net *net = sel_net();
	char err[256] = "";
	nn_backend_options o = nn_backend_options_default();
	o.precision = NN_DTYPE_FP16;
	cr_assert_null(nn_backend_new(&nn_backend_cpu, net, 2, &o, err, sizeof(err)));
	cr_assert(strstr(err, "CUDA"), "%s", err);
	nn_net_free(net);
}

Test(nn_select, cuda_create_without_device_is_refused)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present");
	nn_net *net = sel_net();
	char err[256] = "";
	nn_backend_options o = nn_backend_options_default();
	o.precision = NN_DTYPE_FP16;
	cr_assert_null(nn_backend_new(&nn_backend_cuda, net, 2, &o, err, sizeof(err)));
	cr_assert(err[0], "says why");
	nn_net_free(net);
}

Test(nn_select, cuda_libraries_load)
{
	char err[512] = "";
	if (!nn_cuda_backend_built())
		cr_skip_test("CUDA backend not built (no nvcc or no cuDNN)");
	cr_assert_eq(nn_cuda_load_libraries(err, sizeof(err)), 0, "%s", err);
}
