/*
 * name-test: unit tests of the name and time parsers in src/name.c,
 * printing TAP.  Run by tests/name.bats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mq.h"

static int n, failed;

static void
ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
	if (!cond)
		failed++;
}

int
main(void)
{
	struct mq_name nm;
	char id[MQ_ID_LEN + 1], prev[MQ_ID_LEN + 1], buf[MQ_NAME_MAX];
	const char *errstr;
	uint64_t v;
	int i, sorted = 1, valid = 1;

	mq_id_new(prev);
	for (i = 0; i < 10000; i++) {
		mq_id_new(id);
		if (strcmp(prev, id) >= 0)
			sorted = 0;
		if (!mq_id_valid(id) || strlen(id) > MQ_ID_LEN)
			valid = 0;
		strcpy(prev, id);
	}
	ok(sorted, "IDs made in a row sort strictly in order");
	ok(valid, "made IDs are valid and fit MQ_ID_LEN");

	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,0", MQ_NEW,
	    &nm) == 0 && nm.attempts == 0 &&
	    strcmp(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66") == 0,
	    "new name parses");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3",
	    MQ_CUR, &nm) == 0 && nm.ms == 1795975895696ULL && nm.attempts == 3,
	    "cur name parses with ms deadline and attempt");
	ok(mq_name_parse("18ec9688cb923ac3.2475.fd4836da3b66,1795975895,5",
	    MQ_DEAD, &nm) == 0 && nm.ms == 1795975895000ULL && nm.attempts == 5,
	    "dead name parses");

	{
		static const char *bad_new[] = {
			"", ",0", "x,0", "18ec9688cb923ac3.2475.fd4836da3b66",
			"18ec9688cb923ac3.2475.fd4836da3b66,",
			"18ec9688cb923ac3.2475.fd4836da3b66,-1",
			"18ec9688cb923ac3.2475.fd4836da3b66,01",
			"18ec9688cb923ac3.2475.fd4836da3b66,1x",
			"18ec9688cb923ac3.2475.fd4836da3b66,99999999999999999999",
			"18ec9688cb923ac3.2475.fd4836da3b66,1000001",
			"18EC9688CB923AC3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3..fd4836da3b66,0",
			"18ec9688cb923ac3.12345678901.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b6,0",
			"18ec9688cb923ac.2475.fd4836da3b66,0",
			".18ec9688cb923ac3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b66,0~",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3",
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad_new) / sizeof(*bad_new); k++)
			if (mq_name_parse(bad_new[k], MQ_NEW, &nm) == 0) {
				printf("# accepted: %s\n", bad_new[k]);
				all_bad = 0;
			}
		ok(all_bad, "malformed new names are rejected");
	}
	{
		static const char *bad_cur[] = {
			"18ec9688cb923ac3.2475.fd4836da3b66,0",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.69,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.6961,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,-1795975895.696,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,99999999999999999999.000,3",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,",
			"18ec9688cb923ac3.2475.fd4836da3b66,1795975895.696,3,",
		};
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad_cur) / sizeof(*bad_cur); k++)
			if (mq_name_parse(bad_cur[k], MQ_CUR, &nm) == 0) {
				printf("# accepted: %s\n", bad_cur[k]);
				all_bad = 0;
			}
		ok(all_bad, "malformed cur names are rejected, overflow too");
	}
	{
		char longname[300];

		memset(longname, '1', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		ok(mq_name_parse(longname, MQ_CUR, &nm) == -1,
		    "a 299-byte name is rejected");
	}

	strcpy(nm.id, "18ec9688cb923ac3.2475.fd4836da3b66");
	nm.ms = 1795975895007ULL;
	nm.attempts = 2;
	ok(mq_name_format(buf, sizeof(buf), MQ_CUR, &nm) == 0 &&
	    strcmp(buf, "18ec9688cb923ac3.2475.fd4836da3b66,1795975895.007,2")
	    == 0, "cur name formats with three ms digits");
	ok(mq_name_format(buf, 10, MQ_CUR, &nm) == -1,
	    "formatting into a short buffer fails");

	ok(mq_key_format(buf, sizeof(buf), 0x1a22880e559ULL, MQ_KEY_DIGITS) ==
	    0 && strcmp(buf, "1a22880e559") == 0, "leaf key formats");
	ok(mq_key_format(buf, sizeof(buf), 0x1a22880e559ULL, MQ_TOP_DIGITS) ==
	    0 && strcmp(buf, "1a228") == 0, "top key is the prefix");
	ok(mq_key_parse("1a22880e", MQ_MID_DIGITS, &v) == 0 &&
	    v == 0x1a22880e000ULL, "mid key parses to its first ms");
	ok(mq_key_parse("1A22880E", MQ_MID_DIGITS, &v) == -1 &&
	    mq_key_parse("1a22880", MQ_MID_DIGITS, &v) == -1 &&
	    mq_key_parse("1a22880e0", MQ_MID_DIGITS, &v) == -1,
	    "bad keys are rejected");

	ok(mq_cur_bucket(1795975895000ULL) == 1795975895 &&
	    mq_cur_bucket(1795975895001ULL) == 1795975896,
	    "a lease's bucket is the second it ends in");

	ok(mq_secs_parse("30", &v, &errstr) == 0 && v == 30000, "30 s");
	ok(mq_secs_parse("0.25", &v, &errstr) == 0 && v == 250, "0.25 s");
	ok(mq_secs_parse("1.5", &v, &errstr) == 0 && v == 1500, "1.5 s");
	{
		static const char *bad[] = { "", "-1", "+1", "1.", ".5",
		    "1.2345", "1e3", "0x10", "99999999999", "1 ", " 1", "1.-1" };
		int all_bad = 1;
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(*bad); k++)
			if (mq_secs_parse(bad[k], &v, &errstr) == 0) {
				printf("# accepted: '%s'\n", bad[k]);
				all_bad = 0;
			}
		ok(all_bad, "bad seconds are rejected");
	}

	mq_time_iso(buf, sizeof(buf), 1795975895696ULL);
	ok(strcmp(buf, "2026-11-29T18:11:35Z") == 0, "ISO 8601 UTC time");

	printf("1..%d\n", n);
	return failed != 0;
}
