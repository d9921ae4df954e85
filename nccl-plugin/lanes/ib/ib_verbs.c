/* ib_verbs: libibverbs through dlopen (see ib_verbs.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "nccl-plugin/lanes/ib/ib_verbs.h"

struct fqib_verbs fqib_v;

static pthread_once_t fqib_verbs_once = PTHREAD_ONCE_INIT;
static int fqib_verbs_rc = -ENOENT;
static const char *fqib_verbs_why = "not loaded";

#define SYM(field, name)                                                                                     \
	{                                                                                                    \
		(void **)&fqib_v.field, name                                                                 \
	}

static void load_once(void)
{
	static const struct {
		void **slot;
		const char *name;
	} syms[] = {
	    SYM(get_device_list, "ibv_get_device_list"),
	    SYM(free_device_list, "ibv_free_device_list"),
	    SYM(get_device_name, "ibv_get_device_name"),
	    SYM(open_device, "ibv_open_device"),
	    SYM(close_device, "ibv_close_device"),
	    SYM(query_device, "ibv_query_device"),
	    SYM(query_port, "ibv_query_port"),
	    SYM(alloc_pd, "ibv_alloc_pd"),
	    SYM(dealloc_pd, "ibv_dealloc_pd"),
	    SYM(reg_mr, "ibv_reg_mr"),
	    SYM(dereg_mr, "ibv_dereg_mr"),
	    SYM(create_cq, "ibv_create_cq"),
	    SYM(destroy_cq, "ibv_destroy_cq"),
	    SYM(create_qp, "ibv_create_qp"),
	    SYM(destroy_qp, "ibv_destroy_qp"),
	    SYM(modify_qp, "ibv_modify_qp"),
	};
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fqib_verbs_why = "libibverbs.so.1 is not installed (or does not load)";
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		/* the 1.1 ABI: 1.0 versions of some of these take other structs */
		*syms[i].slot = dlvsym(h, syms[i].name, "IBVERBS_1.1");
		if (!*syms[i].slot)
			*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			fqib_verbs_why = "libibverbs.so.1 lacks a verbs entry point";
			memset(&fqib_v, 0, sizeof(fqib_v));
			dlclose(h);
			return;
		}
	}
	fqib_verbs_rc = 0;
	fqib_verbs_why = "";
}

int fqib_verbs_load(const char **why)
{
	pthread_once(&fqib_verbs_once, load_once);
	*why = fqib_verbs_why;
	return fqib_verbs_rc;
}
