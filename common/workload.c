// SPDX-License-Identifier: GPL-2.0-only
/*
 * Parsing workload scripts.  Words are split as a POSIX shell splits
 * them (quotes and backslashes, '#' starting a comment between words),
 * so names with blanks can be written, and every script the test
 * harness's Python runner accepts reads the same here.
 *
 * Each operation has a signature of argument kinds; the checks a parser
 * can make (kinds, counts, ranges) are made here, everything the
 * filesystem decides is left to the run.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "strutil.h"
#include "workload.h"

/*
 * Argument kinds: p absolute path, s string, n number (k/m/g suffix),
 * b byte, m octal mode, u 32-bit id, t time (SEC[.NSEC]), T mknod type,
 * F chattr flags; after '[' the rest is optional.  A keyword argument
 * ("keep", "noreplace"...) is matched by the operation's own code.
 */
struct wl_op_def {
	const char *name;
	const char *args;
	const char *const *keywords;	/* allowed words for a trailing 'w' */
	const unsigned int *keyword_flags;
};

static const char *const falloc_words[] = { "keep", NULL };
static const unsigned int falloc_flags[] = { WL_FALLOC_KEEP_SIZE };
static const char *const rename_words[] = { "noreplace", "exchange", NULL };
static const unsigned int rename_flags[] = { WL_RENAME_NOREPLACE, WL_RENAME_EXCHANGE };
static const char *const xattr_words[] = { "create", "replace", NULL };
static const unsigned int xattr_flags[] = { WL_XATTR_CREATE, WL_XATTR_REPLACE };

static const struct wl_op_def op_defs[WL_NR_OPS] = {
	[WL_MKDIR]	 = { "mkdir", "p" },
	[WL_CREATE]	 = { "create", "p" },
	[WL_WRITE]	 = { "write", "pnn[b" },
	[WL_TRUNCATE]	 = { "truncate", "pn" },
	[WL_FALLOC]	 = { "falloc", "pnn[w", falloc_words, falloc_flags },
	[WL_PUNCH]	 = { "punch", "pnn" },
	[WL_LINK]	 = { "link", "pp" },
	[WL_RENAME]	 = { "rename", "pp[w", rename_words, rename_flags },
	[WL_UNLINK]	 = { "unlink", "p" },
	[WL_RMDIR]	 = { "rmdir", "p" },
	[WL_SYMLINK]	 = { "symlink", "sp" },
	[WL_MKNOD]	 = { "mknod", "pT[uu" },
	[WL_SETXATTR]	 = { "setxattr", "pss[w", xattr_words, xattr_flags },
	[WL_REMOVEXATTR] = { "removexattr", "ps" },
	[WL_CHMOD]	 = { "chmod", "pm" },
	[WL_CHOWN]	 = { "chown", "puu" },
	[WL_UTIMES]	 = { "utimes", "ptt" },
	[WL_CHATTR]	 = { "chattr", "pF" },
	[WL_FSYNC]	 = { "fsync", "p" },
	[WL_FDATASYNC]	 = { "fdatasync", "p" },
	[WL_SYNC]	 = { "sync", "" },
	[WL_MKSUBVOL]	 = { "mksubvol", "p" },
	[WL_MKSNAP]	 = { "mksnap", "pp" },
	[WL_CLONE]	 = { "clone", "pp" },
	[WL_CLONERANGE]	 = { "clonerange", "pnnpn" },
};

const char *wl_op_name(enum wl_op op)
{
	return op < WL_NR_OPS ? op_defs[op].name : "?";
}

struct parse_ctx {
	const char *script;
	unsigned int line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int syntax_error(struct parse_ctx *pc, const char *fmt, ...)
{
	int n = snprintf(pc->err, pc->errlen, "%s:%u: ", pc->script, pc->line);
	va_list ap;

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < pc->errlen)
		vsnprintf(pc->err + n, pc->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Split the line at *@src into words written to *@out (each
 * NUL-terminated); the source is consumed up to and including its
 * newline.  A quoted word may hold newlines, so one operation may take
 * several lines of the file: *@lines gets how many were consumed, for
 * the line numbers of the operations after it.  Returns the number of
 * words, or -EINVAL (unclosed quote).
 */
static int split_words(struct parse_ctx *pc, const char **src, const char *end, char **out,
		       char **words, int max_words, unsigned int *lines)
{
	const char *s = *src;
	char *o = *out;
	int nr = 0;

	*lines = 1;
	for (;;) {
		while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		if (s == end || *s == '\n')
			break;
		if (*s == '#') {
			while (s < end && *s != '\n')
				s++;
			break;
		}
		if (nr == max_words)
			return syntax_error(pc, "too many words");
		words[nr++] = o;
		while (s < end && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') {
			if (*s == '\'') {
				for (s++; s < end && *s != '\''; s++) {
					if (*s == '\n')
						(*lines)++;
					*o++ = *s;
				}
				if (s == end)
					return syntax_error(pc, "no closing quotation");
				s++;
			} else if (*s == '"') {
				for (s++; s < end && *s != '"'; s++) {
					if (*s == '\\' && s + 1 < end &&
					    (s[1] == '"' || s[1] == '\\' || s[1] == '$' || s[1] == '`'))
						s++;
					else if (*s == '\n')
						(*lines)++;
					*o++ = *s;
				}
				if (s == end)
					return syntax_error(pc, "no closing quotation");
				s++;
			} else if (*s == '\\' && s + 1 < end && s[1] != '\n') {
				*o++ = s[1];
				s += 2;
			} else {
				*o++ = *s++;
			}
		}
		*o++ = '\0';
	}
	if (s < end)
		s++;		/* the newline */
	*src = s;
	*out = o;
	return nr;
}

/* A number: decimal or 0x hex, with an optional k, m or g (binary) suffix. */
static int parse_number(struct parse_ctx *pc, const char *word, uint64_t *ret)
{
	size_t len = strlen(word);
	uint64_t mult = 1, v;
	char buf[32];

	if (len == 0 || len >= sizeof(buf))
		return syntax_error(pc, "bad number '%s'", word);
	memcpy(buf, word, len + 1);
	switch (buf[len - 1]) {
	case 'k': case 'K': mult = 1ULL << 10; break;
	case 'm': case 'M': mult = 1ULL << 20; break;
	case 'g': case 'G': mult = 1ULL << 30; break;
	}
	/* "0x" digits may end in a letter that is no suffix: 0xbk is 11k, 0xb is 11 */
	if (mult != 1)
		buf[len - 1] = '\0';
	if (parse_u64(buf, false, &v))
		return syntax_error(pc, "bad number '%s'", word);
	if (v > UINT64_MAX / mult)
		return syntax_error(pc, "number '%s' too large", word);
	*ret = v * mult;
	return 0;
}

static int parse_time(struct parse_ctx *pc, const char *word, struct wl_time *t)
{
	const char *dot = strchr(word, '.');
	char sec[24], frac[10] = "000000000";
	size_t n = dot ? (size_t)(dot - word) : strlen(word);
	uint64_t v, ns;

	if (n == 0 || n >= sizeof(sec))
		return syntax_error(pc, "bad time '%s'", word);
	memcpy(sec, word, n);
	sec[n] = '\0';
	if (parse_u64(sec, false, &v) || v > INT64_MAX)
		return syntax_error(pc, "bad time '%s'", word);
	if (dot) {
		size_t fl = strlen(dot + 1);

		if (fl == 0 || fl > 9 || strspn(dot + 1, "0123456789") != fl)
			return syntax_error(pc, "bad time '%s' (SEC or SEC.NSEC)", word);
		memcpy(frac, dot + 1, fl);
	}
	if (parse_u64(frac, false, &ns))
		return syntax_error(pc, "bad time '%s'", word);
	t->sec = (int64_t)v;
	t->nsec = (uint32_t)ns;
	return 0;
}

/* chattr flags: [+-=]LETTERS, letters C (nodatacow), c (compress), m (nocompress). */
static int parse_attr_flags(struct parse_ctx *pc, const char *word, struct wl_cmd *cmd)
{
	char sign = word[0];

	if ((sign != '+' && sign != '-' && sign != '=') || !word[1])
		return syntax_error(pc, "bad flags '%s' (+FLAGS, -FLAGS or =FLAGS)", word);
	for (const char *c = word + 1; *c; c++) {
		uint32_t bit = *c == 'C' ? WL_ATTR_NOCOW : *c == 'c' ? WL_ATTR_COMPRESS :
			       *c == 'm' ? WL_ATTR_NOCOMPRESS : 0;

		if (!bit)
			return syntax_error(pc, "unknown flag '%c' (C, c or m)", *c);
		if (sign == '-')
			cmd->clear |= bit;
		else
			cmd->set |= bit;
	}
	if (sign == '=')
		cmd->clear = (WL_ATTR_NOCOW | WL_ATTR_COMPRESS | WL_ATTR_NOCOMPRESS) & ~cmd->set;
	return 0;
}

static int parse_arg(struct parse_ctx *pc, const struct wl_op_def *def, struct wl_cmd *cmd,
		     char kind, const char *word, int *paths, int *numbers, int *times)
{
	uint64_t v;
	int ret = 0;

	switch (kind) {
	case 'p':
		if (word[0] != '/')
			return syntax_error(pc, "path '%s' is not absolute", word);
		if ((*paths)++ == 0)
			cmd->path = word;
		else
			cmd->path2 = word;
		return 0;
	case 's':
		if (cmd->op == WL_SYMLINK || !cmd->name) {
			cmd->name = word;
		} else {
			cmd->value = word;
			cmd->value_len = strlen(word);
		}
		return 0;
	case 'n':
		ret = parse_number(pc, word, &v);
		if (ret)
			return ret;
		switch ((*numbers)++) {
		case 0:
			if (cmd->op == WL_TRUNCATE)
				cmd->len = v;
			else
				cmd->off = v;
			break;
		case 1:
			cmd->len = v;
			break;
		default:
			cmd->off2 = v;
		}
		return 0;
	case 'b':
		ret = parse_number(pc, word, &v);
		if (!ret && v > 255)
			ret = syntax_error(pc, "byte value '%s' out of range", word);
		cmd->byte = (uint8_t)v;
		return ret;
	case 'm': {
		char *end;
		unsigned long m = strtoul(word, &end, 8);

		if (!*word || *end || word[0] == '-' || word[0] == '+' || m > 07777)
			return syntax_error(pc, "bad octal mode '%s'", word);
		cmd->mode = (uint32_t)m;
		return 0;
	}
	case 'u':
		ret = parse_number(pc, word, &v);
		if (!ret && v > UINT32_MAX - 1)
			ret = syntax_error(pc, "id '%s' out of range", word);
		if (cmd->op == WL_MKNOD) {
			if ((*numbers)++ == 0)
				cmd->major = (uint32_t)v;
			else
				cmd->minor = (uint32_t)v;
		} else if ((*numbers)++ == 0) {
			cmd->uid = (uint32_t)v;
		} else {
			cmd->gid = (uint32_t)v;
		}
		return ret;
	case 't':
		return parse_time(pc, word, (*times)++ == 0 ? &cmd->atime : &cmd->mtime);
	case 'T':
		if (strlen(word) != 1 || !strchr("cbps", word[0]))
			return syntax_error(pc, "bad node type '%s' (c, b, p or s)", word);
		cmd->mode = 0644 | (word[0] == 'c' ? S_IFCHR : word[0] == 'b' ? S_IFBLK :
				    word[0] == 'p' ? S_IFIFO : S_IFSOCK);
		return 0;
	case 'F':
		return parse_attr_flags(pc, word, cmd);
	case 'w':
		for (int i = 0; def->keywords[i]; i++) {
			if (strcmp(word, def->keywords[i]) == 0) {
				cmd->flags |= def->keyword_flags[i];
				return 0;
			}
		}
		return syntax_error(pc, "unexpected '%s'", word);
	}
	return syntax_error(pc, "internal: bad argument kind");
}

static int parse_command(struct parse_ctx *pc, char **words, int nr, struct wl_cmd *cmd)
{
	const struct wl_op_def *def = NULL;
	int required, optional, paths = 0, numbers = 0, times = 0;
	const char *bracket;

	for (int op = 0; op < WL_NR_OPS; op++) {
		if (strcmp(words[0], op_defs[op].name) == 0) {
			def = &op_defs[op];
			cmd->op = op;
			break;
		}
	}
	if (!def)
		return syntax_error(pc, "unknown operation '%s'", words[0]);
	bracket = strchr(def->args, '[');
	required = bracket ? (int)(bracket - def->args) : (int)strlen(def->args);
	optional = bracket ? (int)strlen(bracket + 1) : 0;
	if (nr - 1 < required || nr - 1 > required + optional) {
		if (optional)
			return syntax_error(pc, "%s takes %d-%d arguments, got %d", def->name,
					    required, required + optional, nr - 1);
		return syntax_error(pc, "%s takes %d arguments, got %d", def->name, required,
				    nr - 1);
	}
	cmd->byte = 0xab;
	for (int i = 1; i < nr; i++) {
		char kind = i - 1 < required ? def->args[i - 1] : bracket[i - required];
		int ret = parse_arg(pc, def, cmd, kind, words[i], &paths, &numbers, &times);

		if (ret)
			return ret;
	}
	if (cmd->op == WL_MKNOD && (S_ISCHR(cmd->mode) || S_ISBLK(cmd->mode)) && nr != 5)
		return syntax_error(pc, "mknod of a device takes MAJOR MINOR");
	if (cmd->op == WL_MKNOD && (cmd->major >= 1U << 12 || cmd->minor >= 1U << 20))
		return syntax_error(pc, "device number %u:%u out of range (12-bit major, 20-bit minor)",
				    cmd->major, cmd->minor);
	if (cmd->op == WL_MKNOD && !(S_ISCHR(cmd->mode) || S_ISBLK(cmd->mode)) && nr != 3)
		return syntax_error(pc, "mknod of a FIFO or socket takes no numbers");
	if ((cmd->flags & WL_RENAME_NOREPLACE) && (cmd->flags & WL_RENAME_EXCHANGE))
		return syntax_error(pc, "noreplace and exchange exclude each other");
	return 0;
}

static int read_all(FILE *f, char **buf, size_t *len)
{
	size_t alloc = 65536, n = 0;
	char *p = malloc(alloc);

	if (!p)
		return -ENOMEM;
	for (;;) {
		size_t got = fread(p + n, 1, alloc - n, f);

		n += got;
		if (n < alloc) {
			if (ferror(f)) {
				free(p);
				return -EIO;
			}
			break;
		}
		alloc *= 2;
		char *q = realloc(p, alloc);

		if (!q) {
			free(p);
			return -ENOMEM;
		}
		p = q;
	}
	*buf = p;
	*len = n;
	return 0;
}

#define WL_MAX_WORDS 8

int wl_parse(FILE *f, const char *name, struct wl_script *script, char *err, size_t errlen)
{
	struct parse_ctx pc = { name, 0, err, errlen };
	char *src, *out, *words[WL_MAX_WORDS];
	const char *s, *end;
	unsigned int next_line = 1;
	size_t len;
	int ret;

	memset(script, 0, sizeof(*script));
	script->name = name;
	ret = read_all(f, &src, &len);
	if (ret) {
		snprintf(err, errlen, "%s: %s", name, strerror(-ret));
		return ret;
	}
	/* every word is at most as long as its source and its separator */
	script->text = out = malloc(len + 2);
	if (!out) {
		free(src);
		return -ENOMEM;
	}
	s = src;
	end = src + len;
	while (s < end) {
		struct wl_cmd cmd;
		unsigned int lines;
		int nr;

		/* an operation's messages name the line it starts on */
		pc.line = next_line;
		nr = split_words(&pc, &s, end, &out, words, WL_MAX_WORDS, &lines);
		next_line += lines;
		if (nr <= 0) {
			ret = nr;
			if (ret)
				break;
			continue;
		}
		memset(&cmd, 0, sizeof(cmd));
		cmd.line = pc.line;
		ret = parse_command(&pc, words, nr, &cmd);
		if (ret)
			break;
		if (script->nr == script->alloc) {
			size_t alloc = script->alloc ? script->alloc * 2 : 256;
			struct wl_cmd *v = realloc(script->cmds, alloc * sizeof(*v));

			if (!v) {
				ret = -ENOMEM;
				break;
			}
			script->cmds = v;
			script->alloc = alloc;
		}
		script->cmds[script->nr++] = cmd;
	}
	free(src);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "%s: %s", name, strerror(ENOMEM));
	if (ret)
		wl_script_free(script);
	return ret;
}

void wl_script_free(struct wl_script *script)
{
	free(script->cmds);
	free(script->text);
	script->cmds = NULL;
	script->text = NULL;
	script->nr = script->alloc = 0;
}
