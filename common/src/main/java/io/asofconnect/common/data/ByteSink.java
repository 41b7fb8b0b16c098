package io.asofconnect.common.data;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** A growable byte buffer with the few primitives the store's encodings use (varints are zig-zag where signed). */
public final class ByteSink {
    private byte[] buf;
    private int size;

    public ByteSink(int initial) {
        buf = new byte[Math.max(16, initial)];
    }

    private void ensure(int extra) {
        if (size + extra > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + extra));
        }
    }

    public ByteSink write(int b) {
        ensure(1);
        buf[size++] = (byte) b;
        return this;
    }

    public ByteSink write(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, buf, size, b.length);
        size += b.length;
        return this;
    }

    public ByteSink write(byte[] b, int off, int len) {
        ensure(len);
        System.arraycopy(b, off, buf, size, len);
        size += len;
        return this;
    }

    public ByteSink writeInt(int v) {
        ensure(4);
        buf[size++] = (byte) (v >>> 24);
        buf[size++] = (byte) (v >>> 16);
        buf[size++] = (byte) (v >>> 8);
        buf[size++] = (byte) v;
        return this;
    }

    public ByteSink writeLong(long v) {
        writeInt((int) (v >>> 32));
        return writeInt((int) v);
    }

    /** Unsigned LEB128. */
    public ByteSink writeUnsignedVarLong(long v) {
        ensure(10);
        while ((v & ~0x7FL) != 0) {
            buf[size++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buf[size++] = (byte) v;
        return this;
    }

    public ByteSink writeVarLong(long v) {
        return writeUnsignedVarLong((v << 1) ^ (v >> 63));
    }

    /** A non-negative length or count. */
    public ByteSink writeLength(int n) {
        return writeUnsignedVarLong(n);
    }

    public ByteSink writeBytesWithLength(byte[] b) {
        writeLength(b.length);
        return write(b);
    }

    public ByteSink writeString(String s) {
        return writeBytesWithLength(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A string that may be null: a presence byte, then the string. */
    public ByteSink writeNullableString(String s) {
        if (s == null) {
            return write(0);
        }
        write(1);
        return writeString(s);
    }

    public int size() {
        return size;
    }

    /** Overwrites four bytes already written, at {@code pos}. */
    public void setInt(int pos, int v) {
        buf[pos] = (byte) (v >>> 24);
        buf[pos + 1] = (byte) (v >>> 16);
        buf[pos + 2] = (byte) (v >>> 8);
        buf[pos + 3] = (byte) v;
    }

    public byte[] array() {
        return buf;
    }

    public byte[] toByteArray() {
        return Arrays.copyOf(buf, size);
    }
}
