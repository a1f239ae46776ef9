#include "gpu_worker/eval/channel.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "kforge/v1/judge.pb.h"

namespace kforge::eval {
namespace {

// A connected pair: `a` (the receiver under test) and `b`'s raw descriptor.
struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a = std::make_unique<Channel>(fds[0], 1 << 16);
    b = std::make_unique<Channel>(fds[1], 1 << 16);
  }
  std::unique_ptr<Channel> a, b;
};

v1::judge::Called Named(const std::string& rule) {
  v1::judge::Called c;
  c.set_rule(rule);
  return c;
}

TEST(ChannelTest, ASpinningReceiverGetsFramesSentDuringAndAfterItsSpin) {
  Pair p;
  p.a->set_spin_us(5000);
  std::thread sender([&] {
    std::string error;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // within the spin
    EXPECT_TRUE(p.b->Send(Named("first"), &error)) << error;
    std::this_thread::sleep_for(std::chrono::milliseconds(40));  // past it: a blocking read
    EXPECT_TRUE(p.b->Send(Named("second"), &error)) << error;
  });
  v1::judge::Called got;
  std::string error;
  ASSERT_TRUE(p.a->Receive(&got, &error)) << error;
  EXPECT_EQ(got.rule(), "first");
  ASSERT_TRUE(p.a->Receive(&got, &error)) << error;
  EXPECT_EQ(got.rule(), "second");
  sender.join();
}

TEST(ChannelTest, APeerThatClosesDuringTheSpinReadsAsGone) {
  Pair p;
  p.a->set_spin_us(50000);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    p.b.reset();
  });
  v1::judge::Called got;
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.a->Receive(&got, &error));
  EXPECT_EQ(error, "the peer closed the channel");
  // The close ended the spin: it did not poll out its 50 ms.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(45));
  closer.join();
}

TEST(ChannelTest, SpinComesFromTheEnvironmentWithinBoundsElseByDevice) {
  unsetenv("KFORGE_CHANNEL_SPIN_US");
  EXPECT_EQ(ChannelSpinUs(true), 5000u);
  EXPECT_EQ(ChannelSpinUs(false), 0u);
  setenv("KFORGE_CHANNEL_SPIN_US", "250", 1);
  EXPECT_EQ(ChannelSpinUs(false), 250u);
  setenv("KFORGE_CHANNEL_SPIN_US", "0", 1);
  EXPECT_EQ(ChannelSpinUs(true), 0u);
  setenv("KFORGE_CHANNEL_SPIN_US", "999999", 1);
  EXPECT_EQ(ChannelSpinUs(true), 100000u);
  for (const char* bad : {"abc", "-5", "12x"}) {
    setenv("KFORGE_CHANNEL_SPIN_US", bad, 1);
    EXPECT_EQ(ChannelSpinUs(true), 5000u) << bad;
  }
  unsetenv("KFORGE_CHANNEL_SPIN_US");
}

}  // namespace
}  // namespace kforge::eval
