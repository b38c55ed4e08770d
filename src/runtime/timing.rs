//! Runtime stage (feature `cuda`): timing launches with CUDA events, which
//! measure the GPU's own timeline (about 0.5 µs resolution), not the host's.

use std::ffi::c_uint;

use super::driver::{self, CUevent};
use super::error::RuntimeError;
use super::gpu::Gpu;

/// A CUDA event, destroyed on drop.
struct Event<'g> {
    gpu: &'g Gpu,
    raw: CUevent,
}

/// `CU_EVENT_DEFAULT`: timing enabled, spin-waiting on synchronisation.
const EVENT_DEFAULT: c_uint = 0;

impl<'g> Event<'g> {
    fn new(gpu: &'g Gpu) -> Result<Event<'g>, RuntimeError> {
        let mut raw: CUevent = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        let code = unsafe { driver::cuEventCreate(&mut raw, EVENT_DEFAULT) };
        gpu.outcome("cuEventCreate", code)?;
        Ok(Event { gpu, raw })
    }

    /// Marks the current end of the default stream.
    fn record(&self) -> Result<(), RuntimeError> {
        // SAFETY: the event is live; stream 0 is the default stream.
        let code = unsafe { driver::cuEventRecord(self.raw, std::ptr::null_mut()) };
        self.gpu.outcome("cuEventRecord", code)
    }

    fn synchronize(&self) -> Result<(), RuntimeError> {
        // SAFETY: the event is live and recorded.
        let code = unsafe { driver::cuEventSynchronize(self.raw) };
        self.gpu.outcome("cuEventSynchronize", code)
    }

    /// Milliseconds from `self` to `end`, both recorded and complete.
    fn elapsed_until(&self, end: &Event<'_>) -> Result<f32, RuntimeError> {
        let mut milliseconds = 0f32;
        // SAFETY: both events are live and complete.
        let code = unsafe { driver::cuEventElapsedTime(&mut milliseconds, self.raw, end.raw) };
        self.gpu.outcome("cuEventElapsedTime", code)?;
        Ok(milliseconds)
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { driver::cuEventDestroy_v2(self.raw) };
    }
}

impl Gpu {
    /// Runs `body` `warmup` times untimed, then `repetitions` times timed,
    /// returning the GPU time of each timed run in milliseconds, in order.
    ///
    /// `body` should only enqueue work (`Kernel::launch_async`): events are
    /// recorded between runs on the default stream, so run `i`'s time is what
    /// the GPU spent between the end of run `i-1` and the end of run `i`, and
    /// a host-side wait inside `body` would count as idle GPU time. One
    /// synchronisation at the end reports any fault, naming the last launch.
    pub fn time_launches<F>(
        &self,
        warmup: usize,
        repetitions: usize,
        mut body: F,
    ) -> Result<Vec<f32>, RuntimeError>
    where
        F: FnMut() -> Result<(), RuntimeError>,
    {
        for _ in 0..warmup {
            body()?;
        }
        self.synchronize()?;
        let marks = (0..=repetitions)
            .map(|_| Event::new(self))
            .collect::<Result<Vec<_>, _>>()?;
        marks[0].record()?;
        for mark in &marks[1..] {
            body()?;
            mark.record()?;
        }
        marks[repetitions].synchronize()?;
        let times = marks
            .windows(2)
            .map(|pair| pair[0].elapsed_until(&pair[1]))
            .collect::<Result<Vec<f32>, _>>()?;
        self.synchronize()?;
        Ok(times)
    }
}
