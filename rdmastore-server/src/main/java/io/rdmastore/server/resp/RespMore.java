package io.rdmastore.server.resp;

import io.rdmastore.store.NoSuchKeyException;
import io.rdmastore.store.SortedSets;
import io.rdmastore.store.Store;
import io.rdmastore.store.ValueType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The commands on strings, hashes and keys beyond the first set (bit operations, LCS, COPY, HRANDFIELD, OBJECT,
 * MEMORY, ...) and the server commands that answer as a Redis without that feature would (FUNCTION with no functions).
 * Same contract as {@link RespCommands}: Redis's semantics and error texts.
 *
 * <p>Threads: stateless apart from the face; any event loop may call {@link #execute} at once for different
 * connections. Buffers: {@code argv} belongs to the connection.
 */
final class RespMore {
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";
    private static final String SYNTAX = "ERR syntax error";
    private static final String BIT_OFFSET = "ERR bit offset is not an integer or out of range";

    private final RespFace face;
    private final Store store;
    private final RespSets sets;
    private final RespZSets zsets;

    RespMore(RespFace face) {
        this.face = face;
        this.store = face.store;
        this.sets = new RespSets(face);
        this.zsets = new RespZSets(face);
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case FUNCTION -> function(w, argv, argc);
            case HRANDFIELD -> hrandfield(c, w, argv, argc);
            case HSTRLEN -> w.integer(store.hstrlen(argv[1], argv[2]));
            case GETSET -> w.bulk(store.set(argv[1], argv[2], c.setOptions.reset().returnOld(true)).oldValue());
            case SETBIT -> setbit(c, w, argv);
            case GETBIT -> {
                long bit = bitOffset(c, argv[2]);
                if (bit < 0) {
                    w.error(BIT_OFFSET);
                    return;
                }
                byte[] b = store.getRange(argv[1], bit >>> 3, bit >>> 3);
                w.integer(b.length == 0 ? 0 : (b[0] >> (7 - (int) (bit & 7))) & 1);
            }
            case BITCOUNT -> bitcount(c, w, argv, argc);
            case BITPOS -> bitpos(c, w, argv, argc);
            case BITOP -> bitop(w, argv, argc);
            case LCS -> lcs(c, w, argv, argc);
            case COPY -> copy(c, w, argv, argc);
            case EXPIRETIME, PEXPIRETIME -> {
                long at = store.expireTime(argv[1]);
                w.integer(at < 0 || cmd == RespCommand.PEXPIRETIME ? at : at / 1000);
            }
            case OBJECT -> object(w, argv, argc);
            case MEMORY -> memory(c, w, argv, argc);
            case TOUCH -> w.integer(store.exists(Arrays.copyOfRange(argv, 1, argc)));
            case RESET -> {
                face.multi.discard(c);
                face.pubsub.unsubscribeAll(c);
                w.proto = 2;
                c.name = "";
                c.authenticated = face.password() == null;
                w.simple("RESET");
            }
            case DUMP -> dump(w, argv[1]);
            case RESTORE -> restore(c, w, argv, argc);
            default -> {
                if (cmd.group.equals("sorted-set")) {
                    zsets.execute(c, w, cmd, argv, argc);
                } else {
                    sets.execute(c, w, cmd, argv, argc);
                }
            }
        }
    }

    // ---- server ----

    /** FUNCTION as a Redis with no Lua engine loaded and no libraries answers it. */
    private static void function(RespWriter w, byte[][] argv, int argc) {
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "FLUSH")) {
            if (argc > 3 || (argc == 3 && !RespCommand.is(argv[2], "ASYNC") && !RespCommand.is(argv[2], "SYNC"))) {
                w.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            } else {
                w.ok();
            }
        } else if (RespCommand.is(sub, "LIST")) {
            for (int i = 2; i < argc; i++) {
                if (RespCommand.is(argv[i], "WITHCODE")) {
                    continue;
                }
                if (RespCommand.is(argv[i], "LIBRARYNAME") && i + 1 < argc) {
                    i++;
                    continue;
                }
                w.error("ERR Unknown argument " + RespCommands.utf8(argv[i]));
                return;
            }
            w.arrayHeader(0);
        } else if (RespCommand.is(sub, "STATS") && argc == 2) {
            w.mapHeader(2);
            w.bulk("running_script");
            w.nullBulk();
            w.bulk("engines");
            w.mapHeader(0);
        } else if (RespCommand.is(sub, "KILL") && argc == 2) {
            w.error("NOTBUSY No scripts in execution right now.");
        } else if (RespCommand.is(sub, "DELETE") && argc == 3) {
            w.error("ERR Library not found");
        } else if (RespCommand.is(sub, "LOAD") || RespCommand.is(sub, "RESTORE") || RespCommand.is(sub, "DUMP")) {
            w.error("ERR Functions are not supported by rdmastore (no Lua engine)");
        } else if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "FUNCTION", "FLUSH [ASYNC|SYNC]", "    Delete all the libraries (there are none).",
                "LIST [WITHCODE] [LIBRARYNAME <pattern>]", "    Return the libraries (always none).", "STATS",
                "    Return information about the function engines.");
        } else {
            w.error("ERR unknown subcommand or wrong number of arguments for '" + RespCommands.utf8(sub)
                + "'. Try FUNCTION HELP.");
        }
    }

    private void object(RespWriter w, byte[][] argv, int argc) {
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "OBJECT", "ENCODING <key>", "    Return the kind of internal representation Redis would use.",
                "FREQ <key>", "    Return the access frequency index of the key (0: not tracked).",
                "IDLETIME <key>", "    Return the idle time of the key (0: not tracked).", "REFCOUNT <key>",
                "    Return the number of references of the value (always 1).");
            return;
        }
        if (argc != 3 || !(RespCommand.is(sub, "ENCODING") || RespCommand.is(sub, "FREQ")
            || RespCommand.is(sub, "IDLETIME") || RespCommand.is(sub, "REFCOUNT"))) {
            w.error("ERR unknown subcommand or wrong number of arguments for '" + RespCommands.utf8(sub)
                + "'. Try OBJECT HELP.");
            return;
        }
        ValueType type = store.type(argv[2]);
        if (type == ValueType.NONE) {
            w.nullBulk();
            return;
        }
        boolean lfu = face.settings.get("maxmemory-policy").contains("lfu");
        if (RespCommand.is(sub, "ENCODING")) {
            w.bulk(encoding(argv[2], type));
        } else if (RespCommand.is(sub, "REFCOUNT")) {
            w.integer(1);
        } else if (RespCommand.is(sub, "FREQ")) {
            if (!lfu) {
                w.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
                    + "that when switching between policies at runtime LRU and LFU data will take some time to "
                    + "adjust.");
            } else {
                w.integer(0);
            }
        } else if (lfu) {
            w.error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
                + "switching between policies at runtime LRU and LFU data will take some time to adjust.");
        } else {
            w.integer(0);
        }
    }

    /** The encoding Redis would report for this value, from its size and the encoding thresholds set. */
    private String encoding(byte[] key, ValueType type) {
        if (type == ValueType.STRING) {
            byte[] v = store.getRange(key, 0, 44);
            if (v.length <= 20 && isInteger(v)) {
                return "int";
            }
            return v.length <= 44 ? "embstr" : "raw";
        }
        if (type == ValueType.LIST) {
            return "quicklist";
        }
        if (type == ValueType.ZSET) {
            long maxEntries = Long.parseLong(face.settings.get("zset-max-listpack-entries"));
            long maxValue = Long.parseLong(face.settings.get("zset-max-listpack-value"));
            List<SortedSets.Scored> all = store.sortedSets().all(key);
            if (all.size() > maxEntries) {
                return "skiplist";
            }
            for (SortedSets.Scored s : all) {
                if (s.member().length > maxValue) {
                    return "skiplist";
                }
            }
            return "listpack";
        }
        if (type == ValueType.SET) {
            List<byte[]> members = store.sets().members(key);
            if (members.size() > Long.parseLong(face.settings.get("set-max-intset-entries"))) {
                return "hashtable";
            }
            for (byte[] m : members) {
                if (m.length > 20 || !isInteger(m)) {
                    return "hashtable";
                }
            }
            return "intset";
        }
        List<byte[]> all = store.hgetAll(key);
        long maxEntries = Long.parseLong(face.settings.get("hash-max-listpack-entries"));
        long maxValue = Long.parseLong(face.settings.get("hash-max-listpack-value"));
        if (all.size() / 2 > maxEntries) {
            return "hashtable";
        }
        for (byte[] b : all) {
            if (b.length > maxValue) {
                return "hashtable";
            }
        }
        return "listpack";
    }

    private static boolean isInteger(byte[] v) {
        try {
            Long.parseLong(new String(v, java.nio.charset.StandardCharsets.US_ASCII));
            return v.length > 0 && (v[0] != '0' || v.length == 1) && v[0] != '+'
                && !(v[0] == '-' && v.length > 1 && v[1] == '0');
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private void memory(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "USAGE") && argc >= 3) {
            if (argc != 3 && !(argc == 5 && RespCommand.is(argv[3], "SAMPLES"))) {
                w.error(SYNTAX);
                return;
            }
            if (argc == 5 && !RespCommands.parseLong(c, argv[4])) {
                w.error(NOT_INTEGER);
                return;
            }
            w.integerOrNull(memoryUsage(argv[2]));
        } else if (RespCommand.is(sub, "DOCTOR") && argc == 2) {
            w.verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what "
                + "occurs on this base.");
        } else if (RespCommand.is(sub, "PURGE") && argc == 2) {
            w.ok();
        } else if (RespCommand.is(sub, "STATS") && argc == 2) {
            var st = store.stats();
            Runtime rt = Runtime.getRuntime();
            w.mapHeader(4);
            w.bulk("peak.allocated");
            w.integer(rt.totalMemory() + st.usedOffHeapBytes());
            w.bulk("total.allocated");
            w.integer(rt.totalMemory() - rt.freeMemory() + st.usedOffHeapBytes());
            w.bulk("keys.count");
            w.integer(st.keys());
            w.bulk("dataset.bytes");
            w.integer(st.usedOffHeapBytes());
        } else if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "MEMORY", "DOCTOR", "    Return memory problems reports.", "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.", "STATS",
                "    Return information about the memory usage of the server.", "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.");
        } else {
            w.error("ERR unknown subcommand or wrong number of arguments for '" + RespCommands.utf8(sub)
                + "'. Try MEMORY HELP.");
        }
    }

    /**
     * An estimate of the bytes a key costs: its name and value bytes plus the entry's bookkeeping (hash map node,
     * entry object, off-heap header). Null when the key does not exist.
     */
    private Long memoryUsage(byte[] key) {
        ValueType type = store.type(key);
        if (type == ValueType.NONE) {
            return null;
        }
        long entry = 48 + 16 + 16 + key.length;
        if (type == ValueType.STRING) {
            return entry + store.strlen(key) + 16;
        }
        long n = entry + 64;
        if (type == ValueType.ZSET) {
            // a member's bytes and array header, its Key object, its slots in the hash index and the score blocks
            for (SortedSets.Scored s : store.sortedSets().all(key)) {
                n += s.member().length + 16 + 24 + 19 + 16;
            }
            return n;
        }
        for (byte[] b : type == ValueType.SET ? store.sets().members(key)
            : type == ValueType.LIST ? store.lists().range(key, 0, -1) : store.hgetAll(key)) {
            n += b.length + 40;
        }
        return n;
    }

    // ---- hashes ----

    private void hrandfield(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (argc == 2) {
            List<byte[]> all = store.hgetAll(argv[1]);
            if (all.isEmpty()) {
                w.nullBulk();
            } else {
                w.bulk(all.get(2 * ThreadLocalRandom.current().nextInt(all.size() / 2)));
            }
            return;
        }
        boolean withValues = false;
        if (argc == 4 && RespCommand.is(argv[3], "WITHVALUES")) {
            withValues = true;
        } else if (argc > 3) {
            w.error(SYNTAX);
            return;
        }
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        long l = c.num;
        if (l < -Long.MAX_VALUE || (withValues && l < -Long.MAX_VALUE / 2)) {
            w.error("ERR value is out of range");
            return;
        }
        List<byte[]> all = store.hgetAll(argv[1]);
        int size = all.size() / 2;
        if (size == 0 || l == 0) {
            w.arrayHeader(0);
            return;
        }
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int[] picks;
        if (l < 0) {
            long count = -l;
            if (count > Integer.MAX_VALUE - 8) {
                w.error("ERR value is out of range");
                return;
            }
            picks = new int[(int) count];
            for (int i = 0; i < picks.length; i++) {
                picks[i] = rnd.nextInt(size);
            }
        } else {
            int count = (int) Math.min(l, size);
            int[] order = new int[size];
            for (int i = 0; i < size; i++) {
                order[i] = i;
            }
            // a partial Fisher-Yates shuffle: the first count slots are a uniform sample without repeats
            for (int i = 0; i < count; i++) {
                int j = i + rnd.nextInt(size - i);
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            picks = Arrays.copyOf(order, count);
        }
        boolean pairs = withValues && w.resp3();
        w.arrayHeader(withValues && !pairs ? 2L * picks.length : picks.length);
        for (int p : picks) {
            if (pairs) {
                w.arrayHeader(2);
            }
            w.bulk(all.get(2 * p));
            if (withValues) {
                w.bulk(all.get(2 * p + 1));
            }
        }
    }

    // ---- bits ----

    /** A bit offset argument: a bit within proto-max-bulk-len bytes, or -1 when not one (Redis's check). */
    private long bitOffset(RespConnection c, byte[] arg) {
        if (!RespCommands.parseLong(c, arg) || c.num < 0 || (c.num >>> 3) >= face.maxBulkLength()) {
            return -1;
        }
        return c.num;
    }

    private void setbit(RespConnection c, RespWriter w, byte[][] argv) {
        long bit = bitOffset(c, argv[2]);
        if (bit < 0) {
            w.error(BIT_OFFSET);
            return;
        }
        if (argv[3].length != 1 || (argv[3][0] != '0' && argv[3][0] != '1')) {
            w.error("ERR bit is not an integer or out of range");
            return;
        }
        w.integer(store.setBit(argv[1], bit, argv[3][0] == '1'));
    }

    /** Parses start and end of BITCOUNT/BITPOS into {@code out}; false after writing the error. */
    private static boolean parseRange(RespConnection c, RespWriter w, byte[] a, long[] out, int slot) {
        if (!RespCommands.parseLong(c, a)) {
            w.error(NOT_INTEGER);
            return false;
        }
        out[slot] = c.num;
        return true;
    }

    private void bitcount(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        long[] r = new long[2];
        boolean isBit = false;
        if (argc == 4 || argc == 5) {
            if (!parseRange(c, w, argv[2], r, 0) || !parseRange(c, w, argv[3], r, 1)) {
                return;
            }
            if (argc == 5) {
                if (RespCommand.is(argv[4], "BIT")) {
                    isBit = true;
                } else if (!RespCommand.is(argv[4], "BYTE")) {
                    w.error(SYNTAX);
                    return;
                }
            }
        } else if (argc != 2) {
            w.error(SYNTAX);
            return;
        }
        byte[] v = store.get(argv[1]);
        if (v == null) {
            w.integer(0);
            return;
        }
        long total = isBit ? v.length * 8L : v.length;
        long start = 0;
        long end = total - 1;
        if (argc >= 4) {
            start = r[0];
            end = r[1];
            if (start < 0 && end < 0 && start > end) {
                w.integer(0);
                return;
            }
            start = Math.max(0, start < 0 ? total + start : start);
            end = Math.max(0, end < 0 ? total + end : end);
            end = Math.min(end, total - 1);
        }
        if (start > end) {
            w.integer(0);
            return;
        }
        long from = isBit ? start : start * 8;
        long to = isBit ? end : end * 8 + 7;
        w.integer(countBits(v, from, to));
    }

    private static long countBits(byte[] v, long from, long to) {
        long n = 0;
        long i = from;
        while (i <= to && (i & 7) != 0) {
            n += bit(v, i++);
        }
        while (i + 7 <= to) {
            n += Integer.bitCount(v[(int) (i >>> 3)] & 0xff);
            i += 8;
        }
        while (i <= to) {
            n += bit(v, i++);
        }
        return n;
    }

    private static int bit(byte[] v, long i) {
        return (v[(int) (i >>> 3)] >> (7 - (int) (i & 7))) & 1;
    }

    private void bitpos(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        if (c.num != 0 && c.num != 1) {
            w.error("ERR The bit argument must be 1 or 0.");
            return;
        }
        int want = (int) c.num;
        long[] r = new long[2];
        boolean isBit = false;
        boolean endGiven = argc >= 5;
        if (argc > 6) {
            w.error(SYNTAX);
            return;
        }
        if (argc >= 4 && !parseRange(c, w, argv[3], r, 0)) {
            return;
        }
        if (argc == 6) {
            if (RespCommand.is(argv[5], "BIT")) {
                isBit = true;
            } else if (!RespCommand.is(argv[5], "BYTE")) {
                w.error(SYNTAX);
                return;
            }
        }
        if (endGiven && !parseRange(c, w, argv[4], r, 1)) {
            return;
        }
        byte[] v = store.get(argv[1]);
        if (v == null) {
            w.integer(want == 1 ? -1 : 0);
            return;
        }
        long total = isBit ? v.length * 8L : v.length;
        long start = 0;
        long end = total - 1;
        if (argc >= 4) {
            start = r[0];
            end = endGiven ? r[1] : total - 1;
            start = Math.max(0, start < 0 ? total + start : start);
            end = Math.max(0, end < 0 ? total + end : end);
            end = Math.min(end, total - 1);
        }
        if (start > end) {
            w.integer(-1);
            return;
        }
        long from = isBit ? start : start * 8;
        long to = isBit ? end : end * 8 + 7;
        for (long i = from; i <= to; i++) {
            if ((i & 7) == 0 && i + 7 <= to && (v[(int) (i >>> 3)] & 0xff) == (want == 1 ? 0 : 0xff)) {
                i += 7;
                continue;
            }
            if (bit(v, i) == want) {
                w.integer(i);
                return;
            }
        }
        // Past the end, a string is zero-padded: a clear bit is found there, unless the caller bounded the range.
        w.integer(want == 0 && !endGiven ? to + 1 : -1);
    }

    private void bitop(RespWriter w, byte[][] argv, int argc) {
        byte[] op = argv[1];
        int kind;
        if (RespCommand.is(op, "AND")) {
            kind = 0;
        } else if (RespCommand.is(op, "OR")) {
            kind = 1;
        } else if (RespCommand.is(op, "XOR")) {
            kind = 2;
        } else if (RespCommand.is(op, "NOT")) {
            kind = 3;
        } else {
            w.error(SYNTAX);
            return;
        }
        if (kind == 3 && argc != 4) {
            w.error("ERR BITOP NOT must be called with a single source key.");
            return;
        }
        List<byte[]> src = new ArrayList<>();
        int max = 0;
        for (int i = 3; i < argc; i++) {
            byte[] v = store.get(argv[i]);
            src.add(v == null ? new byte[0] : v);
            max = Math.max(max, src.getLast().length);
        }
        if (max == 0) {
            store.delete(argv[2]);
            w.integer(0);
            return;
        }
        byte[] out = new byte[max];
        for (int j = 0; j < max; j++) {
            int acc = j < src.getFirst().length ? src.getFirst()[j] & 0xff : 0;
            if (kind == 3) {
                acc = ~acc & 0xff;
            }
            for (int s = 1; s < src.size(); s++) {
                byte[] b = src.get(s);
                int x = j < b.length ? b[j] & 0xff : 0;
                acc = switch (kind) {
                    case 0 -> acc & x;
                    case 1 -> acc | x;
                    default -> acc ^ x;
                };
            }
            out[j] = (byte) acc;
        }
        store.set(argv[2], out);
        w.integer(max);
    }

    // ---- strings ----

    /** LCS with Redis's dynamic programme and its reply shapes (string, LEN, IDX with ranges from the end). */
    private void lcs(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        ValueType ta = store.type(argv[1]);
        ValueType tb = store.type(argv[2]);
        if ((ta != ValueType.NONE && ta != ValueType.STRING) || (tb != ValueType.NONE && tb != ValueType.STRING)) {
            w.error("ERR The specified keys must contain string values");
            return;
        }
        boolean getIdx = false;
        boolean getLen = false;
        boolean withMatchLen = false;
        long minMatchLen = 0;
        for (int j = 3; j < argc; j++) {
            byte[] opt = argv[j];
            if (RespCommand.is(opt, "IDX")) {
                getIdx = true;
            } else if (RespCommand.is(opt, "LEN")) {
                getLen = true;
            } else if (RespCommand.is(opt, "WITHMATCHLEN")) {
                withMatchLen = true;
            } else if (RespCommand.is(opt, "MINMATCHLEN") && j + 1 < argc) {
                if (!RespCommands.parseLong(c, argv[++j])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                minMatchLen = Math.max(0, c.num);
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (getIdx && getLen) {
            w.error("ERR If you want both the length and indexes, please just use IDX.");
            return;
        }
        byte[] a = store.get(argv[1]);
        byte[] b = store.get(argv[2]);
        a = a == null ? new byte[0] : a;
        b = b == null ? new byte[0] : b;
        int alen = a.length;
        int blen = b.length;
        long cells = (long) (alen + 1) * (blen + 1);
        if (cells * 4 > face.maxBulkLength() || cells > Integer.MAX_VALUE - 8) {
            w.error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
            return;
        }
        int[] dp = new int[(int) cells];
        int row = blen + 1;
        for (int i = 1; i <= alen; i++) {
            for (int j = 1; j <= blen; j++) {
                if (a[i - 1] == b[j - 1]) {
                    dp[i * row + j] = dp[(i - 1) * row + j - 1] + 1;
                } else {
                    dp[i * row + j] = Math.max(dp[(i - 1) * row + j], dp[i * row + j - 1]);
                }
            }
        }
        int total = dp[alen * row + blen];
        if (getLen) {
            w.integer(total);
            return;
        }
        byte[] result = new byte[total];
        List<long[]> ranges = new ArrayList<>();
        int idx = total;
        int aStart = alen;
        int aEnd = 0;
        int bStart = 0;
        int bEnd = 0;
        int i = alen;
        int j = blen;
        while (i > 0 && j > 0) {
            boolean emit = false;
            if (a[i - 1] == b[j - 1]) {
                result[idx - 1] = a[i - 1];
                if (aStart == alen) {
                    aStart = i - 1;
                    aEnd = i - 1;
                    bStart = j - 1;
                    bEnd = j - 1;
                } else if (aStart == i && bStart == j) {
                    aStart--;
                    bStart--;
                } else {
                    emit = true;
                }
                if (aStart == 0 || bStart == 0) {
                    emit = true;
                }
                idx--;
                i--;
                j--;
            } else {
                if (dp[(i - 1) * row + j] > dp[i * row + j - 1]) {
                    i--;
                } else {
                    j--;
                }
                if (aStart != alen) {
                    emit = true;
                }
            }
            if (emit) {
                long matchLen = aEnd - aStart + 1L;
                if (minMatchLen == 0 || matchLen >= minMatchLen) {
                    ranges.add(new long[] {aStart, aEnd, bStart, bEnd, matchLen});
                }
                aStart = alen;
            }
        }
        if (!getIdx) {
            w.bulk(result);
            return;
        }
        w.mapHeader(2);
        w.bulk("matches");
        w.arrayHeader(ranges.size());
        for (long[] r : ranges) {
            w.arrayHeader(withMatchLen ? 3 : 2);
            w.arrayHeader(2);
            w.integer(r[0]);
            w.integer(r[1]);
            w.arrayHeader(2);
            w.integer(r[2]);
            w.integer(r[3]);
            if (withMatchLen) {
                w.integer(r[4]);
            }
        }
        w.bulk("len");
        w.integer(total);
    }

    // ---- keys ----

    private void copy(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        boolean replace = false;
        for (int i = 3; i < argc; i++) {
            if (RespCommand.is(argv[i], "REPLACE")) {
                replace = true;
            } else if (RespCommand.is(argv[i], "DB") && i + 1 < argc) {
                if (!RespCommands.parseLong(c, argv[++i]) || c.num < Integer.MIN_VALUE
                    || c.num > Integer.MAX_VALUE) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num != 0) {
                    w.error("ERR DB index is out of range");
                    return;
                }
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (Arrays.equals(argv[1], argv[2])) {
            w.error("ERR source and destination objects are the same");
            return;
        }
        try {
            w.integer(store.copy(argv[1], argv[2], replace) ? 1 : 0);
        } catch (NoSuchKeyException e) {
            w.integer(0);
        }
    }

    private void dump(RespWriter w, byte[] key) {
        byte[] payload = RespDump.payload(store, key);
        if (payload == null) {
            w.nullBulk();
        } else {
            w.bulk(payload);
        }
    }

    /**
     * RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]. A string is one conditional SET; a hash is
     * written as delete (with REPLACE), HSET and PEXPIREAT, so a concurrent writer of the same key can interleave.
     */
    private void restore(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        boolean replace = false;
        boolean absTtl = false;
        for (int i = 4; i < argc; i++) {
            boolean more = i + 1 < argc;
            if (RespCommand.is(argv[i], "REPLACE")) {
                replace = true;
            } else if (RespCommand.is(argv[i], "ABSTTL")) {
                absTtl = true;
            } else if (RespCommand.is(argv[i], "IDLETIME") && more) {
                if (!RespCommands.parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num < 0) {
                    w.error("ERR Invalid IDLETIME value, must be >= 0");
                    return;
                }
            } else if (RespCommand.is(argv[i], "FREQ") && more) {
                if (!RespCommands.parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num < 0 || c.num > 255) {
                    w.error("ERR Invalid FREQ value, must be >= 0 and <= 255");
                    return;
                }
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        long ttl = c.num;
        if (ttl < 0) {
            w.error("ERR Invalid TTL value, must be >= 0");
            return;
        }
        byte[] key = argv[1];
        if (!replace && store.exists(key) > 0) {
            w.error("BUSYKEY Target key name already exists.");
            return;
        }
        RespDump.Value v = RespDump.parse(argv[3]);
        if (v == null) {
            w.error("ERR DUMP payload version or checksum are wrong");
            return;
        }
        long now = System.currentTimeMillis();
        long at = ttl == 0 ? -1 : absTtl ? ttl : now + ttl;
        if (at >= 0 && at <= now) {
            // already expired: Redis deletes the target (with REPLACE) and creates nothing
            if (replace) {
                store.delete(key);
            }
            w.ok();
            return;
        }
        if (v.type() == RespDump.TYPE_STRING) {
            var o = c.setOptions.reset().ifAbsent(!replace);
            if (at >= 0) {
                o.expireAtMillis(at);
            }
            if (!store.set(key, v.string(), o).written()) {
                w.error("BUSYKEY Target key name already exists.");
                return;
            }
        } else {
            if (replace) {
                store.delete(key);
            }
            if (v.type() == RespDump.TYPE_SET) {
                store.sets().add(key, v.hash());
            } else if (v.type() == RespDump.TYPE_LIST) {
                store.lists().push(key, v.hash(), false, false);
            } else if (v.type() == RespDump.TYPE_ZSET_2) {
                List<byte[]> items = v.hash();
                double[] scores = new double[items.size() / 2];
                List<byte[]> members = new ArrayList<>(scores.length);
                for (int i = 0; i < scores.length; i++) {
                    members.add(items.get(2 * i));
                    scores[i] = RespDump.score(items.get(2 * i + 1));
                }
                store.sortedSets().add(key, scores, members, 0);
            } else {
                store.hset(key, v.hash());
            }
            if (at >= 0) {
                store.expireAt(key, at);
            }
        }
        w.ok();
    }

    // ---- helpers ----

    /** Whether a float argument is an infinity as strtold reads it ("inf", "+inf", "-Infinity", ...). */
    static boolean infinite(byte[] a) {
        String s = new String(a, java.nio.charset.StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT);
        if (s.startsWith("+") || s.startsWith("-")) {
            s = s.substring(1);
        }
        return s.equals("inf") || s.equals("infinity");
    }

    static void help(RespWriter w, String name, String... lines) {
        w.arrayHeader(lines.length + 3);
        w.simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        for (String l : lines) {
            w.simple(l);
        }
        w.simple("HELP");
        w.simple("    Print this help.");
    }
}
