package io.rdmastore.client;

import io.rdmastore.client.protocol.WireReader;
import java.nio.ByteBuffer;
import org.bson.BsonBinaryReader;
import org.bson.BsonBinaryWriter;
import org.bson.BsonDocument;
import org.bson.codecs.BsonDocumentCodec;
import org.bson.codecs.DecoderContext;
import org.bson.codecs.EncoderContext;
import org.bson.io.BasicOutputBuffer;

/** BSON documents to and from their raw bytes, as they travel on the wire. Stateless; any thread. */
final class Bson {
    private static final BsonDocumentCodec CODEC = new BsonDocumentCodec();
    private static final EncoderContext ENCODE = EncoderContext.builder().build();
    private static final DecoderContext DECODE = DecoderContext.builder().build();
    /** Documents and filters are bounded by the server's limits; this bound only rejects impossible lengths. */
    static final long MAX = Integer.MAX_VALUE;
    /** Encoding buffers kept per thread up to this size (larger ones are dropped after use). */
    private static final int KEPT_BUFFER_BYTES = 64 * 1024;
    /** Each thread's encoding buffer, reused instead of a fresh one per request, and copied out once, not twice. */
    private static final ThreadLocal<BasicOutputBuffer> ENCODING = ThreadLocal.withInitial(BasicOutputBuffer::new);

    private Bson() {
    }

    static byte[] encode(BsonDocument doc) {
        if (doc == null) {
            throw new IllegalArgumentException("document must not be null");
        }
        BasicOutputBuffer out = ENCODING.get();
        out.truncateToPosition(0);
        try {
            try (BsonBinaryWriter writer = new BsonBinaryWriter(out)) {
                CODEC.encode(writer, doc, ENCODE);
            }
            return java.util.Arrays.copyOf(out.getInternalBuffer(), out.getPosition());
        } finally {
            if (out.getInternalBuffer().length > KEPT_BUFFER_BYTES) {
                ENCODING.remove();
            }
        }
    }

    static BsonDocument decode(byte[] raw) {
        try (BsonBinaryReader reader = new BsonBinaryReader(ByteBuffer.wrap(raw))) {
            return CODEC.decode(reader, DECODE);
        }
    }

    /** A length-prefixed document of a reply. */
    static BsonDocument read(WireReader r, String what) {
        return decode(r.bytes(what, MAX));
    }
}
