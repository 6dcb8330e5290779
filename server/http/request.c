/* A request's state: its connection's slot, its upload, and its end. */
#include "server/http/request.h"

#include <stdlib.h>
#include <string.h>

struct request *request_slot_new(void)
{
	return calloc(1, sizeof(struct request));
}

void request_slot_free(struct request *rq)
{
	if (rq)
		responses_rejection_destroy(&rq->rej);
	free(rq);
}

struct request *request_begin(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct request *rq = ci ? ci->socket_context : NULL;

	if (!rq)
		return calloc(1, sizeof(*rq));
	/* The key is written before it is read; clearing 128 bytes a request is not free. */
	memset(rq, 0, offsetof(struct request, key));
	rq->pooled = true;
	return rq;
}

void request_end(struct request *rq)
{
	if (rq->kept)
		MHD_destroy_response(rq->kept);
	free(rq->raw);
	free(rq->body);
	if (!rq->pooled)
		free(rq);
}

void request_take_upload(struct request *rq, size_t max_body, const char *data, size_t n)
{
	if (rq->phase == REQUEST_TOO_BIG || rq->body_len + n > max_body) {
		rq->phase = REQUEST_TOO_BIG;
		return;
	}
	if (rq->handler && rq->body_len + n + 1 > rq->body_cap) {
		size_t cap = (rq->body_len + n + 1) * 2;
		char *nb = realloc(rq->body, cap);

		if (!nb) {
			rq->phase = REQUEST_TOO_BIG;
			return;
		}
		rq->body = nb;
		rq->body_cap = cap;
	}
	if (rq->handler) {
		memcpy(rq->body + rq->body_len, data, n);
		rq->body[rq->body_len + n] = '\0';
	}
	rq->body_len += n;
}
