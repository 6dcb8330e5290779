/* SipHash against the reference's test vectors: key 00..0f, inputs 00..(n-1) for n = 0..63. */
#include <check.h>
#include <string.h>

#include "common/siphash.h"

/* SipHash-2-4: vectors_sip64 and vectors_sip128 of the reference's vectors.h, read little-endian. */
static const uint64_t SIP_24_64[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL,
	0x85676696d7fb7e2dULL, 0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL,
	0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL, 0x93f5f5799a932462ULL,
	0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL,
	0xa129ca6149be45e5ULL, 0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL,
	0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL, 0xbed65cf21aa2ee98ULL,
	0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL,
	0x2f2e6163076bcfadULL, 0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL,
	0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL, 0x7127512f72f27cceULL,
	0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL,
	0x9abfd8766a33735cULL, 0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL,
	0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL, 0xf935451de4f21df2ULL,
	0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL,
	0xa192d576b245165aULL, 0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL,
	0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL, 0xb78dbfaf3a8d83bdULL,
	0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL,
	0x958a324ceb064572ULL,
};

static const uint64_t SIP_24_128[64][2] = {
	{ 0xe6a825ba047f81a3ULL, 0x930255c71472f66dULL }, { 0x44af996bd8c187daULL, 0x45fc229b11597634ULL },
	{ 0xc75da4a48d227781ULL, 0xe4ff0af6de8ba3fcULL }, { 0x4ea967520cb6709cULL, 0x51ed8529b0b6335fULL },
	{ 0xaf8f9c2dc16481f8ULL, 0x7955cd7b7c6e0f7dULL }, { 0x886f778059876813ULL, 0x27960e69077a5254ULL },
	{ 0x1386208b33caee14ULL, 0x5ea1d78f30a05e48ULL }, { 0x53c1dbd8beebf1a1ULL, 0x3982f01fa64ab8c0ULL },
	{ 0x61f55862baa9623bULL, 0xb49714f364e2830fULL }, { 0xabbad90a06994426ULL, 0xed716dbb028b7fc4ULL },
	{ 0x56691478c30d1100ULL, 0xbafbd0f3d34754c9ULL }, { 0x77666b3868c55101ULL, 0x18dce5816fdcb4a2ULL },
	{ 0x58f35e9066b226d6ULL, 0x25c13285f64d6382ULL }, { 0x108bc0e947e26998ULL, 0xf752b9c44f9329d0ULL },
	{ 0x9cded766aceffc31ULL, 0x024949e45f48c77eULL }, { 0x11a8b03399e99354ULL, 0xd9c3cf970fec087eULL },
	{ 0xbb54b067caa4e26eULL, 0x77052385bf1533fdULL }, { 0x98b88d73e8063d47ULL, 0x4077e47ac466c054ULL },
	{ 0x8548bf23e4e526a4ULL, 0x23f7aefe81a44d29ULL }, { 0xb0fa65cf31770178ULL, 0xb12e51528920d574ULL },
	{ 0x7390223f83fc259eULL, 0xeb3938e8a544933eULL }, { 0x215a52be5a498e56ULL, 0x121d073ecd14228aULL },
	{ 0x9a6bd15245b5294aULL, 0xae0aff8e52109c46ULL }, { 0xe0f5a9d5dd84d1c9ULL, 0x1c69bf9a9ae28ccfULL },
	{ 0xd850bd78ae79b42dULL, 0xad32618a178a2a88ULL }, { 0x7b445e2d045fce8eULL, 0x6f8f8dcbeab95150ULL },
	{ 0xe807c3b3b4530b9cULL, 0x661f147886e0ae7eULL }, { 0xe4eaa669af48f2abULL, 0x94eb9e122febd3bfULL },
	{ 0x884b576816da6406ULL, 0xf4ae587302f335b9ULL }, { 0xe97d33bfc49d4baaULL, 0xb76a7c463cfdd40cULL },
	{ 0xde6baf1f477f5ceaULL, 0x87226d68d4d71a2bULL }, { 0xfcfa233218b03929ULL, 0x353dc4524fde2317ULL },
	{ 0x3efcea5eca56397cULL, 0x68eb4665559d3e36ULL }, { 0x321cf0467107c677ULL, 0xcfffa94e5f9db6b6ULL },
	{ 0xdf7e84b86c98a637ULL, 0xde549b30f1f02509ULL }, { 0xf9a8a99de6f005a7ULL, 0xc88c3c922e1a2407ULL },
	{ 0x4648c4291f7dc43dULL, 0x11674f90ed769e1eULL }, { 0x1a0efce601bf620dULL, 0x2b69d3c551473c0dULL },
	{ 0x9e667cca8b46038cULL, 0xb5e7be4b085efde4ULL }, { 0x9c2caf3bb95b8a52ULL, 0xd92bd2d0e5cc7344ULL },
	{ 0xad5dc9951e306adfULL, 0xd83b91c6c80cae97ULL }, { 0x397f852c90891180ULL, 0xdbb6705e289135e7ULL },
	{ 0xbb31c2c96a3417e6ULL, 0x5b0ccacc34ae5036ULL }, { 0xaa21b7ef3734d927ULL, 0x89df5aecdc211840ULL },
	{ 0x785e9ced9d7d2389ULL, 0x4273cc66b1c9b1d8ULL }, { 0x657d5ebf91806d4aULL, 0x4cb150a294fa8911ULL },
	{ 0x89aee75560f9330eULL, 0x022949cf3d0efc3fULL }, { 0xd1190b722b431ce6ULL, 0x1b1563dc4bd8c88eULL },
	{ 0xcf82f749f5aee5f7ULL, 0x169b2608a6559037ULL }, { 0x4fa5b7d00f038d43ULL, 0x03641a20adf237a8ULL },
	{ 0xe304bf4feed390a5ULL, 0x3f4286f2270d7e24ULL }, { 0xc493fe72a1c1e25fULL, 0x38f5f9ae7cd35cb1ULL },
	{ 0x6eb306bd5c32972cULL, 0x7c013a8bd03d13b2ULL }, { 0x94ca6b7a2214c892ULL, 0x9ed32a009f65f09fULL },
	{ 0x8c32d80b1150e8dcULL, 0x871d91d64108d5fbULL }, { 0x1279dac78449f167ULL, 0xda832592b52be348ULL },
	{ 0xe94ed572cff23819ULL, 0x362a1da96f16947eULL }, { 0xfe49ed46961e4874ULL, 0x8e6904163024620fULL },
	{ 0xd8d6a998dea5fc57ULL, 0x1d8a3d58d0386400ULL }, { 0xbe1cdcef1cdeec9fULL, 0x595357d9743676d4ULL },
	{ 0x53f128eb000c04e3ULL, 0x40e772d8cb73ca66ULL }, { 0xfe1d836a9a009776ULL, 0x7a0f6793591ca9ccULL },
	{ 0xa067f52123545358ULL, 0xbd5947f0a447d505ULL }, { 0x4a83502f77d15051ULL, 0x7cbd3f979a063e50ULL },
};

/*
 * SipHash-1-3: the reference siphash.c built with -DcROUNDS=1 -DdROUNDS=3 (it ships no
 * vectors for 1-3), on the same key and inputs.
 */
static const uint64_t SIP_13_64[64] = {
	0xabac0158050fc4dcULL, 0xc9f49bf37d57ca93ULL, 0x82cb9b024dc7d44dULL,
	0x8bf80ab8e7ddf7fbULL, 0xcf75576088d38328ULL, 0xdef9d52f49533b67ULL,
	0xc50d2b50c59f22a7ULL, 0xd3927d989bb11140ULL, 0x369095118d299a8eULL,
	0x25a48eb36c063de4ULL, 0x79de85ee92ff097fULL, 0x70c118c1f94dc352ULL,
	0x78a384b157b4d9a2ULL, 0x306f760c1229ffa7ULL, 0x605aa111c0f95d34ULL,
	0xd320d86d2a519956ULL, 0xcc4fdd1a7d908b66ULL, 0x9cf2689063dbd80cULL,
	0x8ffc389cb473e63eULL, 0xf21f9de58d297d1cULL, 0xc0dc2f46a6cce040ULL,
	0xb992abfe2b45f844ULL, 0x7ffe7b9ba320872eULL, 0x525a0e7fdae6c123ULL,
	0xf464aeb267349c8cULL, 0x45cd5928705b0979ULL, 0x3a3e35e3ca9913a5ULL,
	0xa91dc74e4ade3b35ULL, 0xfb0bed02ef6cd00dULL, 0x88d93cb44ab1e1f4ULL,
	0x540f11d643c5e663ULL, 0x2370dd1f8c21d1bcULL, 0x81157b6c16a7b60dULL,
	0x4d54b9e57a8ff9bfULL, 0x759f12781f2a753eULL, 0xcea1a3bebf186b91ULL,
	0x2cf508d3ada26206ULL, 0xb6101c2da3c33057ULL, 0xb3f47496ae3a36a1ULL,
	0x626b57547b108392ULL, 0xc1d2363299e41531ULL, 0x667cc1923f1ad944ULL,
	0x65704ffec8138825ULL, 0x24f280d1c28949a6ULL, 0xc2ca1cedfaf8876bULL,
	0xc2164bfc9f042196ULL, 0xa16e9c9368b1d623ULL, 0x49fb169c8b5114fdULL,
	0x9f3143f8df074c46ULL, 0xc6fdaf2412cc86b3ULL, 0x7eaf49d10a52098fULL,
	0x1cf313559d292f9aULL, 0xc44a30dda2f41f12ULL, 0x36fae98943a71ed0ULL,
	0x318fb34c73f0bce6ULL, 0xa27abf3670a7e980ULL, 0xb4bcc0db243c6d75ULL,
	0x23f8d852fdb71513ULL, 0x8f035f4da67d8a08ULL, 0xd89cd0e5b7e8f148ULL,
	0xf6f4e6bcf7a644eeULL, 0xaec59ad80f1837f2ULL, 0xc3b2f6154b6694e0ULL,
	0x9d199062b7bbb3a8ULL,
};

static const uint64_t SIP_13_128[64][2] = {
	{ 0xbea58827b2bc7ee7ULL, 0x013030dd6adb62fdULL }, { 0xa8edd36004376ffcULL, 0x63f02f2bcc73055eULL },
	{ 0x9b836905097f7875ULL, 0x95ea6a8c54c95b85ULL }, { 0x9ff7dc1efaccc56bULL, 0x43d7eb1277182348ULL },
	{ 0x5a282bac714e780cULL, 0x252cbf8fe7928e9fULL }, { 0x0c625b3489db28f3ULL, 0x3e849526a4295279ULL },
	{ 0x10e743f7293dd0dcULL, 0xf8a68539e8b05109ULL }, { 0xc3e0aaf223b98410ULL, 0x77ab4808c82e2fa6ULL },
	{ 0xb4dae3d5e1fe12aaULL, 0x99c7f935ab164f72ULL }, { 0x9439f32c04b8dd81ULL, 0x427c1394000e72f4ULL },
	{ 0x898e495d1d54aa4fULL, 0xb42fb287c3a40ebaULL }, { 0xdb914455f39a3b72ULL, 0x4e0c6efc3d63d6b1ULL },
	{ 0xa819489e85923fe5ULL, 0x658cea9f739506dcULL }, { 0x1d80eac9c758f8b2ULL, 0x4478656d5903d653ULL },
	{ 0x7222c9db6862e787ULL, 0x78e3645f66cab026ULL }, { 0x6c52bdb205557ec1ULL, 0x09017e1eeccd2129ULL },
	{ 0xeb8e511557d9a8d0ULL, 0x93179e3df8b013b5ULL }, { 0x8d66bb3ff9264123ULL, 0xecf7bdfee8125197ULL },
	{ 0x4d708fb73df042efULL, 0x2b09b7169f443c02ULL }, { 0x61f10ac23862f7abULL, 0xe9bc26554d4b31b2ULL },
	{ 0x0bcf90bb112f2c3cULL, 0xb7e9912e9bca35e3ULL }, { 0x922aa0220f687a2aULL, 0xefe0ec0fd24951f4ULL },
	{ 0x3ed41d2330d1a8c9ULL, 0x7937f8576945e642ULL }, { 0xb9ea5c40847b121dULL, 0x59c5e69b5a77d89fULL },
	{ 0xca92fdbc37f84b9eULL, 0x4ad0841a06d209ceULL }, { 0xafb4735d961a0339ULL, 0xd2b173f9184d275aULL },
	{ 0x4e7ed609120a4d7fULL, 0x64adcfe138756fd0ULL }, { 0x38cedcfb40e21ee6ULL, 0x93dd2749d24c9f96ULL },
	{ 0x8cdd0f7bb3a23b4cULL, 0x1494b289c1955efaULL }, { 0xddec6f06cad46fe0ULL, 0x866f89d85a8a0654ULL },
	{ 0x80659c13344ca85cULL, 0x0607729049f28aa8ULL }, { 0x8b853c5b1c96ea42ULL, 0x1090a7df50e5c317ULL },
	{ 0xb25778e6de446c40ULL, 0xd317740cf3603194ULL }, { 0xf4fc2013ae7bf5c5ULL, 0x6bc6561de768e8b4ULL },
	{ 0xe76b675b7a73bf04ULL, 0xf9bff47d0105dec3ULL }, { 0xea07193fc0c96351ULL, 0x4f7b72305ced4410ULL },
	{ 0xda8e7102f010a137ULL, 0x40f153e49e3f4bd2ULL }, { 0xdad3ed1a387e87b9ULL, 0x10ac23ff753ec308ULL },
	{ 0x4cdac55e0004507cULL, 0x9331725c0e44c95aULL }, { 0x46c6db833724b881ULL, 0x6cb4bd2ad80c9dcaULL },
	{ 0x13b4b93e54205750ULL, 0x38f9eed9fa3c0bd5ULL }, { 0xe41124e74d595f94ULL, 0xf3d8564487be35d3ULL },
	{ 0xb27717373e3b9237ULL, 0x02f6627e9dbf7011ULL }, { 0x46966457c8e7d43aULL, 0x56de624d6c0aeb11ULL },
	{ 0x514faf446c3991cdULL, 0x0a3f80d99d8d5785ULL }, { 0x8f867b728e1528feULL, 0x58a264daacc90339ULL },
	{ 0xf0e58c28b810cc40ULL, 0xc8eb0e8ab6c03abcULL }, { 0x3c9a6940f590146fULL, 0x3727c9ec204497d4ULL },
	{ 0xa6841a5eb7f105d5ULL, 0x0803edb28335c403ULL }, { 0x68b42bd7cf731549ULL, 0x6f8d1c0e88a57c2bULL },
	{ 0x3f40ab45fe9cd63eULL, 0x6676a29b95add22fULL }, { 0x7cb5201bef39e88bULL, 0x6a2bc2a8b67eba83ULL },
	{ 0xfe3122b46a180914ULL, 0xcab41ccf6281e1deULL }, { 0xcf72b64ac2ccf32bULL, 0x9b06f3f3d2b81f15ULL },
	{ 0x5c02d682283ab9b9ULL, 0x7b53f713fa568cdbULL }, { 0x6d20fb9436ca7cd9ULL, 0x2233c350361fbdb8ULL },
	{ 0x1ae40ba4192eec94ULL, 0x8493c4306b0d94f3ULL }, { 0x5b049a203f60414bULL, 0x10fedfa341a340e1ULL },
	{ 0x94f01c9f30cbfb23ULL, 0x6965421bab550789ULL }, { 0x2b8a919056b6d9e7ULL, 0x0e30c8125c2f2f23ULL },
	{ 0x7b84f3e7f73ce8adULL, 0x61ce0db0544bfa36ULL }, { 0x8a1c57eef2c51006ULL, 0xc7f1bd38e5bf0cc8ULL },
	{ 0x155ddbfb005d1d27ULL, 0x1802b47ca9ce9d5dULL }, { 0x6f42fe4ee300584cULL, 0xad6052a70a6b9f07ULL },
};

static struct siphash_key vector_key(void)
{
	unsigned char k[16];

	for (int i = 0; i < 16; i++)
		k[i] = (unsigned char)i;
	return siphash_key_from_bytes(k);
}

static void vector_input(unsigned char *in)
{
	for (int i = 0; i < 64; i++)
		in[i] = (unsigned char)i;
}

START_TEST(key_bytes_are_little_endian)
{
	struct siphash_key k = vector_key();

	ck_assert_uint_eq(k.k0, 0x0706050403020100ULL);
	ck_assert_uint_eq(k.k1, 0x0f0e0d0c0b0a0908ULL);
}
END_TEST

START_TEST(siphash24_vectors)
{
	struct siphash_key k = vector_key();
	unsigned char in[64];

	vector_input(in);
	for (size_t n = 0; n < 64; n++) {
		struct siphash_128 w = siphash24_128(&k, in, n);

		ck_assert_msg(siphash24(&k, in, n) == SIP_24_64[n], "64-bit, length %zu", n);
		ck_assert_msg(w.lo == SIP_24_128[n][0] && w.hi == SIP_24_128[n][1], "128-bit, length %zu", n);
	}
}
END_TEST

START_TEST(siphash13_vectors)
{
	struct siphash_key k = vector_key();
	unsigned char in[64];

	vector_input(in);
	for (size_t n = 0; n < 64; n++) {
		struct siphash_128 w = siphash13_128(&k, in, n);

		ck_assert_msg(siphash13(&k, in, n) == SIP_13_64[n], "64-bit, length %zu", n);
		ck_assert_msg(w.lo == SIP_13_128[n][0] && w.hi == SIP_13_128[n][1], "128-bit, length %zu", n);
	}
}
END_TEST

/* Two values other SipHash-1-3 implementations publish for the all-zero key. */
START_TEST(siphash13_zero_key)
{
	struct siphash_key z = { 0, 0 };

	ck_assert_uint_eq(siphash13(&z, "", 0), 0xd1fba762150c532cULL);
	ck_assert_uint_eq(siphash13(&z, "siphash", 7), 0x8264ceeccb16bcbeULL);
}
END_TEST

START_TEST(unaligned_input)
{
	struct siphash_key k = vector_key();
	unsigned char buf[72];

	for (size_t off = 1; off < 8; off++) {
		memset(buf, 0xa5, sizeof(buf));
		vector_input(buf + off);
		ck_assert_uint_eq(siphash13(&k, buf + off, 63), SIP_13_64[63]);
		ck_assert_uint_eq(siphash24(&k, buf + off, 41), SIP_24_64[41]);
	}
}
END_TEST

/* Each call draws a fresh key: two equal 128-bit draws would be a broken source. */
START_TEST(random_keys_differ)
{
	struct siphash_key a, b;

	ck_assert_int_eq(siphash_key_random(&a), 0);
	ck_assert_int_eq(siphash_key_random(&b), 0);
	ck_assert(a.k0 != b.k0 || a.k1 != b.k1);
	ck_assert(a.k0 != 0 || a.k1 != 0);
	ck_assert_uint_ne(siphash13(&a, "10.0.0.1", 8), siphash13(&b, "10.0.0.1", 8));
}
END_TEST

Suite *siphash_suite(void)
{
	Suite *s = suite_create("siphash");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, key_bytes_are_little_endian);
	tcase_add_test(tc, siphash24_vectors);
	tcase_add_test(tc, siphash13_vectors);
	tcase_add_test(tc, siphash13_zero_key);
	tcase_add_test(tc, unaligned_input);
	tcase_add_test(tc, random_keys_differ);
	suite_add_tcase(s, tc);
	return s;
}
