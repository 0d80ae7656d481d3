package io.rdmastore.client.protocol;

import io.rdmastore.client.BlobInfo;
import java.util.ArrayList;
import java.util.List;

/**
 * The members' results a replica set's blob put or stage replies with (docs/protocol.md, BLOB_PUT and BLOB_STAGE):
 * n:i32, n x (member:string, path:string, ok:u8, detail:string, transfer ns:i64, crc ns:i64, fsync ns:i64).
 * Stateless; any thread.
 */
public final class BlobResults {
    private BlobResults() {
    }

    /** Writes {@code results} after what {@code w} holds. */
    public static WireWriter write(WireWriter w, List<BlobInfo.Member> results) {
        w.i32(results.size());
        for (BlobInfo.Member x : results) {
            w.string(x.member()).string(x.path()).u8(x.ok() ? 1 : 0).string(x.detail()).i64(x.transferNanos())
                .i64(x.crcNanos()).i64(x.syncNanos());
        }
        return w;
    }

    /** Reads what {@link #write} wrote. */
    public static List<BlobInfo.Member> read(WireReader r) {
        int n = r.i32("results");
        if (n < 0 || n > 64) {
            throw new ProtocolException("bad result count " + n);
        }
        List<BlobInfo.Member> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new BlobInfo.Member(r.string("member", 1024), r.string("path", 1024), r.u8("ok") != 0,
                r.string("detail", 64 * 1024), r.i64("transfer"), r.i64("crc"), r.i64("sync")));
        }
        return out;
    }
}
