/** A PNG as the platform reads one (signature, IHDR with its dimensions), padded to `size` bytes. */
export const png = (width: number, height: number, size = 33): Buffer => {
  const bytes = Buffer.alloc(Math.max(33, size));
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  bytes.writeUInt32BE(13, 8);
  bytes.write('IHDR', 12);
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  // Distinct bytes past the header: two images of one size are two assets.
  for (let i = 33; i < bytes.length; i++) bytes[i] = (i * 31 + width) & 0xff;
  return bytes;
};
