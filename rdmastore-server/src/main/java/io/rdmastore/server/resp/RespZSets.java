package io.rdmastore.server.resp;

import io.rdmastore.store.SortedSets;
import io.rdmastore.store.SortedSets.Aggregate;
import io.rdmastore.store.SortedSets.LexBound;
import io.rdmastore.store.SortedSets.Op;
import io.rdmastore.store.SortedSets.Range;
import io.rdmastore.store.SortedSets.Scored;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The sorted set commands (ZADD ... ZSCAN, ZUNION/ZINTER/ZDIFF and their STORE forms, ZMPOP) with Redis 7.0's
 * semantics, argument checks and error texts, on the store's {@link SortedSets}. Scores are printed as Redis 7.0 does
 * ({@code %.17g}: 1.5, 17, 0.10000000000000001, inf); with WITHSCORES a RESP3 reply is an array of [member, score]
 * pairs, a RESP2 reply a flat array. The blocking forms (BZPOPMIN, BZPOPMAX, BZMPOP) are in {@link RespBlocking}.
 *
 * <p>Threads: stateless apart from the face; any event loop may call {@link #execute} at once for different
 * connections. Buffers: {@code argv} belongs to the connection.
 */
final class RespZSets {
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";
    private static final String NOT_FLOAT = "ERR value is not a valid float";
    private static final String SYNTAX = "ERR syntax error";
    private static final String MINMAX_FLOAT = "ERR min or max is not a float";
    private static final String MINMAX_LEX = "ERR min or max not valid string range item";
    private static final byte[] CRLF = {'\r', '\n'};

    private final SortedSets zsets;

    RespZSets(RespFace face) {
        this.zsets = face.store.sortedSets();
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case ZADD -> zadd(w, argv, argc);
            case ZINCRBY -> {
                double by = SortedSets.parse(argv[2]);
                if (Double.isNaN(by)) {
                    w.error(NOT_FLOAT);
                    return;
                }
                score(w, zsets.increment(argv[1], by, argv[3], 0));
            }
            case ZREM -> w.integer(zsets.remove(argv[1], args(argv, 2, argc)));
            case ZCARD -> w.integer(zsets.size(argv[1]));
            case ZSCORE -> score(w, zsets.score(argv[1], argv[2]));
            case ZMSCORE -> {
                Double[] s = zsets.scores(argv[1], args(argv, 2, argc));
                w.arrayHeader(s.length);
                for (Double d : s) {
                    score(w, d);
                }
            }
            case ZRANK, ZREVRANK -> w.integerOrNull(zsets.rank(argv[1], argv[2], cmd == RespCommand.ZREVRANK));
            case ZCOUNT -> {
                Range r = scoreRange(argv[2], argv[3], false, 0, -1);
                if (r == null) {
                    w.error(MINMAX_FLOAT);
                    return;
                }
                w.integer(zsets.count(argv[1], r));
            }
            case ZLEXCOUNT -> {
                Range r = lexRange(argv[2], argv[3], false, 0, -1);
                if (r == null) {
                    w.error(MINMAX_LEX);
                    return;
                }
                w.integer(zsets.count(argv[1], r));
            }
            case ZRANGE -> range(c, w, argv, argc, 1, null, SortedSets.By.RANK, false, true, false);
            case ZRANGESTORE -> range(c, w, argv, argc, 2, argv[1], SortedSets.By.RANK, false, true, true);
            case ZREVRANGE -> range(c, w, argv, argc, 1, null, SortedSets.By.RANK, true, false, false);
            case ZRANGEBYSCORE -> range(c, w, argv, argc, 1, null, SortedSets.By.SCORE, false, false, false);
            case ZREVRANGEBYSCORE -> range(c, w, argv, argc, 1, null, SortedSets.By.SCORE, true, false, false);
            case ZRANGEBYLEX -> range(c, w, argv, argc, 1, null, SortedSets.By.LEX, false, false, false);
            case ZREVRANGEBYLEX -> range(c, w, argv, argc, 1, null, SortedSets.By.LEX, true, false, false);
            case ZREMRANGEBYRANK -> {
                if (!RespCommands.parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                long start = c.num;
                if (!RespCommands.parseLong(c, argv[3])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                w.integer(zsets.removeRange(argv[1], Range.ranks(start, c.num, false)));
            }
            case ZREMRANGEBYSCORE -> {
                Range r = scoreRange(argv[2], argv[3], false, 0, -1);
                if (r == null) {
                    w.error(MINMAX_FLOAT);
                    return;
                }
                w.integer(zsets.removeRange(argv[1], r));
            }
            case ZREMRANGEBYLEX -> {
                Range r = lexRange(argv[2], argv[3], false, 0, -1);
                if (r == null) {
                    w.error(MINMAX_LEX);
                    return;
                }
                w.integer(zsets.removeRange(argv[1], r));
            }
            case ZPOPMIN, ZPOPMAX -> zpop(c, w, argv, argc, cmd == RespCommand.ZPOPMAX);
            case ZMPOP -> zmpop(c, w, argv, argc);
            case ZRANDMEMBER -> zrandmember(c, w, argv, argc);
            case ZSCAN -> zscan(c, w, argv, argc);
            case ZUNIONSTORE -> combine(c, w, cmd, argv, argc, Op.UNION, true, false);
            case ZINTERSTORE -> combine(c, w, cmd, argv, argc, Op.INTER, true, false);
            case ZDIFFSTORE -> combine(c, w, cmd, argv, argc, Op.DIFF, true, false);
            case ZUNION -> combine(c, w, cmd, argv, argc, Op.UNION, false, false);
            case ZINTER -> combine(c, w, cmd, argv, argc, Op.INTER, false, false);
            case ZDIFF -> combine(c, w, cmd, argv, argc, Op.DIFF, false, false);
            case ZINTERCARD -> combine(c, w, cmd, argv, argc, Op.INTER, false, true);
            default -> w.error("ERR internal error: no handler for '" + cmd.lowerName + "'");
        }
    }

    private static List<byte[]> args(byte[][] argv, int from, int to) {
        return Arrays.asList(argv).subList(from, to);
    }

    /** A score reply: RESP3 double, RESP2 bulk string, null when absent. */
    static void score(RespWriter w, Double d) {
        if (d == null) {
            w.nullBulk();
            return;
        }
        String s = SortedSets.format(d);
        if (w.proto == 3) {
            w.out.writeByte(',');
            w.out.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
            w.out.writeBytes(CRLF);
        } else {
            w.bulk(s.getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** Members, with their scores when asked: RESP3 [member, score] pairs, RESP2 a flat array. */
    private static void members(RespWriter w, List<Scored> list, boolean withScores) {
        if (!withScores) {
            w.arrayHeader(list.size());
            for (Scored s : list) {
                w.bulk(s.member());
            }
            return;
        }
        if (w.proto == 3) {
            w.arrayHeader(list.size());
            for (Scored s : list) {
                w.arrayHeader(2);
                w.bulk(s.member());
                score(w, s.score());
            }
        } else {
            w.arrayHeader(list.size() * 2L);
            for (Scored s : list) {
                w.bulk(s.member());
                score(w, s.score());
            }
        }
    }

    // ---- ZADD ----

    private void zadd(RespWriter w, byte[][] argv, int argc) {
        int flags = 0;
        boolean incr = false;
        int i = 2;
        for (; i < argc; i++) {
            byte[] a = argv[i];
            if (RespCommand.is(a, "NX")) {
                flags |= SortedSets.NX;
            } else if (RespCommand.is(a, "XX")) {
                flags |= SortedSets.XX;
            } else if (RespCommand.is(a, "GT")) {
                flags |= SortedSets.GT;
            } else if (RespCommand.is(a, "LT")) {
                flags |= SortedSets.LT;
            } else if (RespCommand.is(a, "CH")) {
                flags |= SortedSets.CH;
            } else if (RespCommand.is(a, "INCR")) {
                incr = true;
            } else {
                break;
            }
        }
        int elements = argc - i;
        if (elements == 0 || elements % 2 != 0) {
            w.error(SYNTAX);
            return;
        }
        if ((flags & SortedSets.NX) != 0 && (flags & SortedSets.XX) != 0) {
            w.error("ERR XX and NX options at the same time are not compatible");
            return;
        }
        int gtlt = flags & (SortedSets.GT | SortedSets.LT);
        if (gtlt == (SortedSets.GT | SortedSets.LT) || (gtlt != 0 && (flags & SortedSets.NX) != 0)) {
            w.error("ERR GT, LT, and/or NX options at the same time are not compatible");
            return;
        }
        if (incr && elements > 2) {
            w.error("ERR INCR option supports a single increment-element pair");
            return;
        }
        int n = elements / 2;
        double[] scores = new double[n];
        byte[][] members = new byte[n][];
        for (int j = 0; j < n; j++) {
            scores[j] = SortedSets.parse(argv[i + 2 * j]);
            if (Double.isNaN(scores[j])) {
                w.error(NOT_FLOAT);
                return;
            }
            members[j] = argv[i + 2 * j + 1];
        }
        if (incr) {
            score(w, zsets.increment(argv[1], scores[0], members[0], flags));
        } else {
            w.integer(zsets.add(argv[1], scores, Arrays.asList(members), flags));
        }
    }

    // ---- ranges ----

    /** A score bound: "(x" exclusive, else inclusive; NaN when not a float. */
    private static double bound(byte[] a, boolean[] exclusive) {
        byte[] v = a;
        if (a.length > 0 && a[0] == '(') {
            exclusive[0] = true;
            v = Arrays.copyOfRange(a, 1, a.length);
        } else {
            exclusive[0] = false;
        }
        return SortedSets.parse(v);
    }

    private static Range scoreRange(byte[] min, byte[] max, boolean reverse, long offset, long limit) {
        boolean[] ex = new boolean[1];
        double lo = bound(min, ex);
        boolean loEx = ex[0];
        double hi = bound(max, ex);
        if (Double.isNaN(lo) || Double.isNaN(hi)) {
            return null;
        }
        return Range.scores(lo, loEx, hi, ex[0], reverse, offset, limit);
    }

    private static Range lexRange(byte[] min, byte[] max, boolean reverse, long offset, long limit) {
        LexBound lo = LexBound.parse(min);
        LexBound hi = LexBound.parse(max);
        if (lo == null || hi == null) {
            return null;
        }
        return Range.lex(lo, hi, reverse, offset, limit);
    }

    /**
     * ZRANGE and its older forms; {@code first} is the index of the source key, {@code dest} the ZRANGESTORE
     * destination (null otherwise); {@code auto}: the BYSCORE/BYLEX/REV keywords are accepted (ZRANGE, ZRANGESTORE).
     */
    private void range(RespConnection c, RespWriter w, byte[][] argv, int argc, int first, byte[] dest,
                       SortedSets.By fixedBy, boolean fixedReverse, boolean auto, boolean store) {
        SortedSets.By by = auto ? null : fixedBy;
        Boolean reverse = auto ? null : fixedReverse;
        boolean withScores = false;
        long offset = 0;
        long limit = -1;
        boolean hasLimit = false;
        for (int j = first + 3; j < argc; j++) {
            int left = argc - j - 1;
            byte[] a = argv[j];
            if (!store && RespCommand.is(a, "WITHSCORES")) {
                withScores = true;
            } else if (RespCommand.is(a, "LIMIT") && left >= 2) {
                if (!RespCommands.parseLong(c, argv[j + 1])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                offset = c.num;
                if (!RespCommands.parseLong(c, argv[j + 2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                limit = c.num;
                hasLimit = true;
                j += 2;
            } else if (reverse == null && RespCommand.is(a, "REV")) {
                reverse = true;
            } else if (by == null && RespCommand.is(a, "BYLEX")) {
                by = SortedSets.By.LEX;
            } else if (by == null && RespCommand.is(a, "BYSCORE")) {
                by = SortedSets.By.SCORE;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (reverse == null) {
            reverse = false;
        }
        if (by == null) {
            by = SortedSets.By.RANK;
        }
        if (hasLimit && limit != -1 && by == SortedSets.By.RANK) {
            w.error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
            return;
        }
        if (withScores && by == SortedSets.By.LEX) {
            w.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
            return;
        }
        byte[] min = argv[first + 1];
        byte[] max = argv[first + 2];
        if (reverse && by != SortedSets.By.RANK) {
            byte[] t = min;
            min = max;
            max = t;
        }
        Range r;
        switch (by) {
            case RANK -> {
                if (!RespCommands.parseLong(c, min)) {
                    w.error(NOT_INTEGER);
                    return;
                }
                long start = c.num;
                if (!RespCommands.parseLong(c, max)) {
                    w.error(NOT_INTEGER);
                    return;
                }
                r = Range.ranks(start, c.num, reverse);
            }
            case SCORE -> {
                r = scoreRange(min, max, reverse, offset, limit);
                if (r == null) {
                    w.error(MINMAX_FLOAT);
                    return;
                }
            }
            default -> {
                r = lexRange(min, max, reverse, offset, limit);
                if (r == null) {
                    w.error(MINMAX_LEX);
                    return;
                }
            }
        }
        if (dest != null) {
            w.integer(zsets.rangeStore(dest, argv[first], r));
        } else {
            members(w, zsets.range(argv[first], r), withScores);
        }
    }

    // ---- pops and random members ----

    private void zpop(RespConnection c, RespWriter w, byte[][] argv, int argc, boolean max) {
        if (argc > 3) {
            w.error(SYNTAX);
            return;
        }
        long count = 1;
        if (argc == 3) {
            if (!RespCommands.parseLong(c, argv[2]) || c.num < 0) {
                w.error("ERR value is out of range, must be positive");
                return;
            }
            count = c.num;
        }
        List<Scored> popped = zsets.pop(argv[1], count, max);
        if (argc == 2) {
            // no COUNT: a flat [member, score] in RESP2 and RESP3 alike
            w.arrayHeader(popped.size() * 2L);
            for (Scored s : popped) {
                w.bulk(s.member());
                score(w, s.score());
            }
        } else {
            members(w, popped, true);
        }
    }

    /** ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]. */
    private void zmpop(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (!RespCommands.parseLong(c, argv[1]) || c.num <= 0 || c.num > Integer.MAX_VALUE) {
            w.error("ERR numkeys should be greater than 0");
            return;
        }
        long numKeys = c.num;
        int where = 2 + (int) Math.min(numKeys, argc);
        if (numKeys > argc - 3 || where >= argc) {
            w.error(SYNTAX);
            return;
        }
        boolean max;
        if (RespCommand.is(argv[where], "MIN")) {
            max = false;
        } else if (RespCommand.is(argv[where], "MAX")) {
            max = true;
        } else {
            w.error(SYNTAX);
            return;
        }
        long count = -1;
        for (int j = where + 1; j < argc; j++) {
            if (count == -1 && RespCommand.is(argv[j], "COUNT") && j + 1 < argc) {
                if (!RespCommands.parseLong(c, argv[++j]) || c.num <= 0) {
                    w.error("ERR count should be greater than 0");
                    return;
                }
                count = c.num;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (count == -1) {
            count = 1;
        }
        // as Redis: the first key that exists decides (a wrong type there is an error), later keys are not looked at
        for (int k = 2; k < where; k++) {
            List<Scored> popped = zsets.pop(argv[k], count, max);
            if (!popped.isEmpty()) {
                w.arrayHeader(2);
                w.bulk(argv[k]);
                w.arrayHeader(popped.size());
                for (Scored s : popped) {
                    w.arrayHeader(2);
                    w.bulk(s.member());
                    score(w, s.score());
                }
                return;
            }
        }
        w.nullArray();
    }

    private void zrandmember(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (argc == 2) {
            List<Scored> one = zsets.randomMembers(argv[1], 1);
            w.bulk(one.isEmpty() ? null : one.getFirst().member());
            return;
        }
        boolean withScores = false;
        if (argc == 4 && RespCommand.is(argv[3], "WITHSCORES")) {
            withScores = true;
        } else if (argc != 3) {
            w.error(SYNTAX);
            return;
        }
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        long count = c.num;
        if (count == Long.MIN_VALUE || (withScores && count < -Long.MAX_VALUE / 2)
            || count < -(Integer.MAX_VALUE - 8L)) {
            w.error("ERR value is out of range");
            return;
        }
        members(w, zsets.randomMembers(argv[1], count), withScores);
    }

    private void zscan(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        RespSets.ScanArgs a = RespSets.scanArgs(c, w, argv, argc);
        if (a != null) {
            RespSets.scanReply(w, zsets.scan(argv[1], a.cursor(), a.match(), a.count()));
        }
    }

    // ---- union, intersection, difference ----

    private void combine(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc, Op op,
                         boolean store, boolean cardinality) {
        int numIndex = store ? 2 : 1;
        if (!RespCommands.parseLong(c, argv[numIndex])) {
            w.error(NOT_INTEGER);
            return;
        }
        long setnum = c.num;
        if (setnum < 1) {
            w.error("ERR at least 1 input key is needed for '" + cmd.lowerName + "' command");
            return;
        }
        if (setnum > argc - (numIndex + 1)) {
            w.error(SYNTAX);
            return;
        }
        int n = (int) setnum;
        List<byte[]> keys = args(argv, numIndex + 1, numIndex + 1 + n);
        for (byte[] k : keys) {
            zsets.checkSetLike(k);
        }
        double[] weights = null;
        Aggregate agg = Aggregate.SUM;
        boolean withScores = false;
        long limit = 0;
        int j = numIndex + 1 + n;
        while (j < argc) {
            int remaining = argc - j;
            if (op != Op.DIFF && !cardinality && remaining >= n + 1 && RespCommand.is(argv[j], "WEIGHTS")) {
                j++;
                weights = new double[n];
                for (int i = 0; i < n; i++, j++) {
                    weights[i] = SortedSets.parse(argv[j]);
                    if (Double.isNaN(weights[i])) {
                        w.error("ERR weight value is not a float");
                        return;
                    }
                }
            } else if (op != Op.DIFF && !cardinality && remaining >= 2 && RespCommand.is(argv[j], "AGGREGATE")) {
                byte[] a = argv[j + 1];
                if (RespCommand.is(a, "SUM")) {
                    agg = Aggregate.SUM;
                } else if (RespCommand.is(a, "MIN")) {
                    agg = Aggregate.MIN;
                } else if (RespCommand.is(a, "MAX")) {
                    agg = Aggregate.MAX;
                } else {
                    w.error(SYNTAX);
                    return;
                }
                j += 2;
            } else if (!store && !cardinality && RespCommand.is(argv[j], "WITHSCORES")) {
                withScores = true;
                j++;
            } else if (cardinality && remaining >= 2 && RespCommand.is(argv[j], "LIMIT")) {
                if (!RespCommands.parseLong(c, argv[j + 1]) || c.num < 0) {
                    w.error("ERR LIMIT can't be negative");
                    return;
                }
                limit = c.num;
                j += 2;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (cardinality) {
            w.integer(zsets.intersectionSize(keys, limit));
        } else if (store) {
            w.integer(zsets.combineInto(op, argv[1], keys, weights, agg));
        } else {
            members(w, zsets.combine(op, keys, weights, agg), withScores);
        }
    }
}
