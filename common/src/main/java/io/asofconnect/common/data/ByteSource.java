package io.asofconnect.common.data;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads what {@link ByteSink} wrote. Every read is bounds-checked and throws
 * {@link MalformedEncodingException} past the end, so damaged bytes can never be read as data.
 */
public final class ByteSource {
    private final byte[] buf;
    private int pos;
    private final int end;

    public ByteSource(byte[] buf, int offset) {
        this(buf, offset, buf.length);
    }

    /** Reads {@code buf[offset, end)} only: a slice of a larger array, such as one version of a packed row. */
    public ByteSource(byte[] buf, int offset, int end) {
        if (offset < 0 || end > buf.length || offset > end) {
            throw new MalformedEncodingException("slice [" + offset + ", " + end + ") outside " + buf.length + " bytes");
        }
        this.buf = buf;
        this.pos = offset;
        this.end = end;
    }

    private void need(int n) {
        if (n < 0 || end - pos < n) {
            throw new MalformedEncodingException("encoding ends early: need " + n + " bytes at " + pos + " of " + end);
        }
    }

    public int read() {
        need(1);
        return buf[pos++] & 0xFF;
    }

    public int readInt() {
        need(4);
        int v = ((buf[pos] & 0xFF) << 24) | ((buf[pos + 1] & 0xFF) << 16) | ((buf[pos + 2] & 0xFF) << 8) | (buf[pos + 3] & 0xFF);
        pos += 4;
        return v;
    }

    public long readLong() {
        long hi = readInt() & 0xFFFFFFFFL;
        long lo = readInt() & 0xFFFFFFFFL;
        return (hi << 32) | lo;
    }

    public long readUnsignedVarLong() {
        long v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            int b = read();
            v |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return v;
            }
        }
        throw new MalformedEncodingException("varint longer than 10 bytes at " + pos);
    }

    public long readVarLong() {
        long u = readUnsignedVarLong();
        return (u >>> 1) ^ -(u & 1);
    }

    public int readLength() {
        long n = readUnsignedVarLong();
        if (n > Integer.MAX_VALUE) {
            throw new MalformedEncodingException("length " + n + " at " + pos + " is out of range");
        }
        return (int) n;
    }

    public byte[] readBytesWithLength() {
        int n = readLength();
        need(n);
        byte[] b = Arrays.copyOfRange(buf, pos, pos + n);
        pos += n;
        return b;
    }

    public String readString() {
        int n = readLength();
        need(n);
        String s = new String(buf, pos, n, StandardCharsets.UTF_8);
        pos += n;
        return s;
    }

    public String readNullableString() {
        int present = read();
        if (present == 0) {
            return null;
        }
        if (present != 1) {
            throw new MalformedEncodingException("bad presence marker " + present + " at " + (pos - 1));
        }
        return readString();
    }

    public boolean atEnd() {
        return pos == end;
    }

    public int position() {
        return pos;
    }

    /** A count that sizes an allocation: it cannot exceed the bytes left, since every element takes at least one byte. */
    public int readCount() {
        int n = readLength();
        if (n > end - pos) {
            throw new MalformedEncodingException("count " + n + " at " + pos + " exceeds the " + (end - pos) + " bytes left");
        }
        return n;
    }
}
