# machine.ADC as a Zeal source (sensor kinds "adc" and "rp2040_temp"; see sources.py).
_KIND_RAW = 0  # = sources.KIND_RAW (a class attribute: not a const)


class Source:
    """machine.ADC on a pin or an ADC channel; `read_u16()` gives 0..65535 on every port.

    The profile's calibration maps the count to the reading, e.g. 3.3 V full scale on a
    16-bit count: cal_gain "33/655350", cal_offset "0". RP2040 channel 4 is the internal
    temperature sensor (T = 27 - (V - 0.706) / 0.001721 with V = 3.3 * count / 65535; the
    ready profile example is firmware/examples/rp2040_temp.json)."""

    kind = _KIND_RAW

    def __init__(self, pin=None, atten=None, channel=None):
        import machine

        if channel is not None:
            self._adc = machine.ADC(channel)
        elif isinstance(pin, int):
            self._adc = machine.ADC(machine.Pin(pin))
        else:
            self._adc = machine.ADC(pin)
        if atten is not None and hasattr(self._adc, "atten"):
            self._adc.atten(atten)  # ESP32: input range; RP2040 has none

    def read(self):
        return self._adc.read_u16()
