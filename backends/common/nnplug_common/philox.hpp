// Moved to the plugin kit.
#pragma once
#include <nnplug/kit/philox.hpp>
