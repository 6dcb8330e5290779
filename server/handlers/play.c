/* The /play page: server/handlers/play.html, compiled in. */
#include "server/handlers/play.h"

#include <stdlib.h>
#include <string.h>

/*
 * The page is server/handlers/play.html, a file of its own (edit it there);
 * the build turns its bytes into this array (xxd -i, the Makefile's
 * $(BUILD)/gen/play_html.h).  Colours as the dashboard's (Okabe-Ito).
 * The attendee's wait function runs in a Worker made from a Blob, one call
 * at a time with a 500 ms deadline: a throw, a value that is not a number of
 * milliseconds, or no answer (an endless loop: the Worker is terminated)
 * stops the run with a message.  Every wait is capped at 30 s.
 */
static const unsigned char PAGE[] = {
#include "play_html.h"
};

char *play_page(void)
{
	char *page = malloc(sizeof(PAGE) + 1);

	if (!page)
		return NULL;
	memcpy(page, PAGE, sizeof(PAGE));
	page[sizeof(PAGE)] = '\0';
	return page;
}
