#include "cli/model_dir.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "nn/net.h"

int cli_mkdir_p(const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int64_t cli_export_model(store *db, const nn_net *src, int64_t step, const char *dir,
			 int64_t parent, const char *note, char *err, size_t errlen)
{
	if (!src) {
		snprintf(err, errlen, "no weights to export");
		return -1;
	}
	nn_net *net = nn_net_clone(src);
	if (!net) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	net->meta.train_step = (uint64_t)step;
	net->meta.created = (uint64_t)time(NULL);
	snprintf(net->meta.parent, sizeof(net->meta.parent), "%lld", (long long)parent);
	nn_net_fold_bn(net);
	char file[8192];
	snprintf(file, sizeof(file), "%s/models/model-%08lld.sente", dir, (long long)step);
	int64_t id = -1;
	if (nn_net_save(net, file, err, errlen) == 0 &&
	    store_add_model(db, file, parent, step, note, &id) != 0) {
		snprintf(err, errlen, "registering the model: %s", store_errmsg(db));
		id = -1;
	}
	nn_net_free(net);
	return id;
}
