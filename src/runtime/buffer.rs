//! Runtime stage (feature `cuda`): device memory as plain bytes — allocate,
//! copy in and out, fill — with typed helpers over the host element types.

use std::ffi::c_void;

use super::driver::{self, CUdeviceptr};
use super::error::{Bytes, RuntimeError};
use super::gpu::Gpu;
use super::launch::KernelArg;
use crate::data::{self as host, Element, ElementType};

/// A device allocation of `len_bytes()` bytes, freed on drop. Invariant:
/// copies move exactly `len_bytes()` bytes (a size mismatch is an error, not
/// a partial copy); an empty buffer has address 0 and never calls the driver.
#[derive(Debug)]
pub struct DeviceBuffer<'g> {
    gpu: &'g Gpu,
    address: CUdeviceptr,
    bytes: usize,
}

impl Gpu {
    /// `bytes` of uninitialised device memory (256-byte aligned, as the
    /// driver aligns every allocation).
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer<'_>, RuntimeError> {
        let mut address: CUdeviceptr = 0;
        if bytes > 0 {
            // SAFETY: `address` is a valid out-pointer.
            let code = unsafe { driver::cuMemAlloc_v2(&mut address, bytes) };
            self.outcome("cuMemAlloc_v2", code)
                .map_err(|error| with_size(error, bytes))?;
        }
        Ok(DeviceBuffer {
            gpu: self,
            address,
            bytes,
        })
    }

    /// A new buffer holding a copy of `bytes`.
    pub fn upload(&self, bytes: &[u8]) -> Result<DeviceBuffer<'_>, RuntimeError> {
        let mut buffer = self.alloc(bytes.len())?;
        buffer.copy_from_host(bytes)?;
        Ok(buffer)
    }

    /// A new buffer holding `values` in the GPU's byte order.
    pub fn upload_elements<T: Element>(
        &self,
        values: &[T],
    ) -> Result<DeviceBuffer<'_>, RuntimeError> {
        self.upload(&host::to_bytes(values))
    }
}

/// Adds the size asked for to an allocation failure, the one fact the
/// driver's "out of memory" leaves out.
fn with_size(error: RuntimeError, bytes: usize) -> RuntimeError {
    match error {
        RuntimeError::Driver { call, mut code } => {
            code.description =
                format!("{} (asked for {})", code.description, Bytes(bytes as u64)).into();
            RuntimeError::Driver { call, code }
        }
        other => other,
    }
}

impl DeviceBuffer<'_> {
    /// The device address, for kernel arguments.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The buffer's address as a kernel argument.
    pub fn arg(&self) -> KernelArg {
        KernelArg::Pointer(self.address)
    }

    fn check_len(&self, what: &str, len: usize) -> Result<(), RuntimeError> {
        if len == self.bytes {
            Ok(())
        } else {
            Err(RuntimeError::Input(format!(
                "{what}: host has {} but the device buffer has {}",
                Bytes(len as u64),
                Bytes(self.bytes as u64)
            )))
        }
    }

    /// Copies `bytes` (exactly `len_bytes()` of them) to the device.
    pub fn copy_from_host(&mut self, bytes: &[u8]) -> Result<(), RuntimeError> {
        self.check_len("copy to device", bytes.len())?;
        if self.bytes == 0 {
            return Ok(());
        }
        // SAFETY: `bytes` is readable for `self.bytes` bytes; the allocation
        // is that large.
        let code = unsafe {
            driver::cuMemcpyHtoD_v2(self.address, bytes.as_ptr().cast::<c_void>(), self.bytes)
        };
        self.gpu.outcome("cuMemcpyHtoD_v2", code)
    }

    /// Copies the whole buffer into `bytes` (exactly `len_bytes()` long).
    /// Synchronous: faults of earlier launches surface here, named.
    pub fn copy_to_host(&self, bytes: &mut [u8]) -> Result<(), RuntimeError> {
        self.check_len("copy to host", bytes.len())?;
        if self.bytes == 0 {
            return Ok(());
        }
        // SAFETY: `bytes` is writable for `self.bytes` bytes; the allocation
        // is that large.
        let code = unsafe {
            driver::cuMemcpyDtoH_v2(
                bytes.as_mut_ptr().cast::<c_void>(),
                self.address,
                self.bytes,
            )
        };
        self.gpu.outcome("cuMemcpyDtoH_v2", code)
    }

    /// The buffer's contents.
    pub fn to_host(&self) -> Result<Vec<u8>, RuntimeError> {
        let mut bytes = vec![0; self.bytes];
        self.copy_to_host(&mut bytes)?;
        Ok(bytes)
    }

    /// The buffer's contents as elements of `T`.
    pub fn read<T: Element>(&self) -> Result<Vec<T>, RuntimeError> {
        Ok(host::from_bytes(&self.to_host()?)?)
    }

    /// Overwrites the buffer with `values` (which must fill it exactly).
    pub fn write<T: Element>(&mut self, values: &[T]) -> Result<(), RuntimeError> {
        self.copy_from_host(&host::to_bytes(values))
    }

    /// Sets every byte to `value`.
    pub fn fill_bytes(&mut self, value: u8) -> Result<(), RuntimeError> {
        if self.bytes == 0 {
            return Ok(());
        }
        // SAFETY: the allocation holds `self.bytes` bytes.
        let code = unsafe { driver::cuMemsetD8_v2(self.address, value, self.bytes) };
        self.gpu.outcome("cuMemsetD8_v2", code)
    }

    /// Writes `ty`'s poison into every element, on the device (no transfer),
    /// so that outputs a kernel never writes can be found afterwards.
    pub fn fill_poison(&mut self, ty: ElementType) -> Result<(), RuntimeError> {
        if self.bytes % ty.bytes() != 0 {
            return Err(RuntimeError::Input(format!(
                "poison fill: {} is not a whole number of {} elements",
                Bytes(self.bytes as u64),
                ty.name()
            )));
        }
        if self.bytes == 0 {
            return Ok(());
        }
        let count = self.bytes / ty.bytes();
        let bits = ty.poison_bits();
        // SAFETY: `count` elements of `ty.bytes()` fill the allocation exactly.
        let (call, code) = match ty.bytes() {
            2 => ("cuMemsetD16_v2", unsafe {
                driver::cuMemsetD16_v2(self.address, bits as u16, count)
            }),
            _ => ("cuMemsetD32_v2", unsafe {
                driver::cuMemsetD32_v2(self.address, bits, count)
            }),
        };
        self.gpu.outcome(call, code)
    }
}

impl From<&DeviceBuffer<'_>> for KernelArg {
    fn from(buffer: &DeviceBuffer<'_>) -> KernelArg {
        buffer.arg()
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            // SAFETY: allocated by cuMemAlloc_v2 in `alloc`, freed once. A
            // failure (after a sticky fault) leaves the memory to the context.
            let _ = unsafe { driver::cuMemFree_v2(self.address) };
        }
    }
}
