package io.rdmastore.transport.tcp;

import io.rdmastore.transport.CarrierTransport;

import java.nio.charset.StandardCharsets;

/**
 * Byte layout of the TCP provider's wire format. Every frame is {@code [length:int32 BE][type:int8][body:length]};
 * {@code length} counts the body only. See the package documentation for the body of each type.
 */
final class FrameDescriptor {
    /** Length word plus type byte. */
    static final int HEADER_LENGTH = 5;

    /** An application message; the body is the message. */
    static final byte MESSAGE = 0;
    /** {@code [requestId:int64][regionId:int32][offset:int64][length:int32]}. */
    static final byte READ_REQUEST = 1;
    /** {@code [requestId:int64][status:int8]} then the bytes (status OK) or a UTF-8 error text. */
    static final byte READ_RESPONSE = 2;
    /** {@code [requestId:int64][regionId:int32][offset:int64]} then the bytes to write. */
    static final byte WRITE_REQUEST = 3;
    /** {@code [requestId:int64][status:int8]} then nothing (status OK) or a UTF-8 error text. */
    static final byte WRITE_RESPONSE = 4;
    /** The sender is closing the connection because of the UTF-8 reason in the body. */
    static final byte ERROR = 5;

    static final int READ_REQUEST_LENGTH = 8 + 4 + 8 + 4;
    static final int WRITE_REQUEST_HEADER = 8 + 4 + 8;
    static final int RESPONSE_HEADER = 8 + 1;

    static final byte STATUS_OK = 0;
    static final byte STATUS_FAILED = 1;

    /** Longest error text carried in a response or ERROR frame. */
    static final int MAX_ERROR_TEXT = 1024;

    /** Sent in plain text to a connection that did not start with the preface, when no foreign protocol is set. */
    static final byte[] BAD_PREFACE_REPLY =
        "-ERR not an rdmastore native connection: bad preface\r\n".getBytes(StandardCharsets.US_ASCII);

    /** Byte {@code i} (0..3) of {@link CarrierTransport#PREFACE}, big-endian. */
    static byte prefaceByte(int i) {
        return (byte) (CarrierTransport.PREFACE >>> (24 - 8 * i));
    }

    static byte[] errorText(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        if (b.length <= MAX_ERROR_TEXT) {
            return b;
        }
        return java.util.Arrays.copyOf(b, MAX_ERROR_TEXT);
    }

    private FrameDescriptor() {
    }
}
